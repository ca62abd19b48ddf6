package history

import (
	"context"
	"time"

	"flotilla.dev/flotilla/policy/compliance"
)

// Transition is an event whose state differs from the previous event of its
// series (the first event of a series is a transition).
type Transition struct {
	Event
	// From is the previous state ("" for the first event).
	From compliance.State `json:"from"`
}

// Transitions keeps the events that change their series' state. events must be
// oldest first, as Store.Events returns them.
func Transitions(events []Event) []Transition {
	last := map[Key]compliance.State{}
	var out []Transition
	for _, e := range events {
		prev, seen := last[e.Key()]
		if !seen || prev != e.State {
			out = append(out, Transition{Event: e, From: prev})
		}
		last[e.Key()] = e.State
	}
	return out
}

// LastBecameNonCompliant returns when the query's events last went to
// NonCompliant from another state (or started NonCompliant), and false when
// they never did.
func LastBecameNonCompliant(ctx context.Context, s Store, q Query) (time.Time, bool, error) {
	events, err := s.Events(ctx, Query{Policy: q.Policy, Template: q.Template, Cluster: q.Cluster})
	if err != nil {
		return time.Time{}, false, err
	}
	var at time.Time
	found := false
	for _, t := range Transitions(events) {
		if t.State == compliance.NonCompliant && (!found || t.Time.After(at)) {
			at, found = t.Time, true
		}
	}
	return at, found, nil
}

// Remediation is one NonCompliant period that ended Compliant.
type Remediation struct {
	Key
	NonCompliantAt time.Time     `json:"noncompliantAt"`
	CompliantAt    time.Time     `json:"compliantAt"`
	Duration       time.Duration `json:"duration"`
}

// Remediations lists the NonCompliant -> Compliant periods of the query's
// series, oldest first; a period still open is not listed.
func Remediations(ctx context.Context, s Store, q Query) ([]Remediation, error) {
	events, err := s.Events(ctx, Query{Policy: q.Policy, Template: q.Template, Cluster: q.Cluster})
	if err != nil {
		return nil, err
	}
	open := map[Key]time.Time{}
	var out []Remediation
	for _, t := range Transitions(events) {
		switch t.State {
		case compliance.NonCompliant:
			open[t.Key()] = t.Time
		case compliance.Compliant:
			if since, ok := open[t.Key()]; ok {
				delete(open, t.Key())
				if !q.Since.IsZero() && t.Time.Before(q.Since) {
					continue
				}
				out = append(out, Remediation{Key: t.Key(), NonCompliantAt: since, CompliantAt: t.Time, Duration: t.Time.Sub(since)})
			}
		}
	}
	return out, nil
}

// ChangedSince lists the transitions at or after q.Since, oldest first. Only
// the events from Since on are read, plus the newest event before Since of the
// series they belong to, so that the first event after Since counts as a
// change only when it differs from the state before.
func ChangedSince(ctx context.Context, s Store, q Query) ([]Transition, error) {
	window, priors, _, err := readWindow(ctx, s, q, nil)
	if err != nil {
		return nil, err
	}
	return transitionsFrom(window, priorEvents(priors)), nil
}
