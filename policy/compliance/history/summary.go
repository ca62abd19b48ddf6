package history

import (
	"context"
	"sort"
	"time"

	"flotilla.dev/flotilla/policy/compliance"
)

// Summary answers the history questions over a window: what changed since a
// date, which NonCompliant periods ended (time to remediate), and when each
// cluster last became NonCompliant in the window. Trend is filled by the
// callers that have a report (LoadTrend).
type Summary struct {
	Since time.Time `json:"since"`
	// Changes are the transitions at or after Since, oldest first.
	Changes []Transition `json:"changes"`
	// Remediations are the NonCompliant -> Compliant periods that ended at or
	// after Since (they may have started before), oldest end first.
	Remediations []Remediation `json:"remediations"`
	// MeanTimeToRemediate is the mean of the remediations' durations (0 when none).
	MeanTimeToRemediate time.Duration `json:"meanTimeToRemediate"`
	// Clusters lists, per cluster that changed in the window, when it last
	// became NonCompliant (omitted when it did not in the window).
	Clusters []ClusterChange `json:"clusters"`
	Trend    *Trend          `json:"trend,omitempty"`
}

// ClusterChange is one cluster's activity in the window.
type ClusterChange struct {
	Cluster string `json:"cluster"`
	// Changes is the number of transitions.
	Changes int `json:"changes"`
	// LastBecameNonCompliant is the newest transition to NonCompliant.
	LastBecameNonCompliant time.Time `json:"lastBecameNonCompliant,omitzero"`
	// Remediated is the number of remediations that ended in the window.
	Remediated int `json:"remediated"`
}

// Summarize reads the window from q.Since on (narrowed by q's policy,
// template and cluster) and answers the questions. keep, when set, keeps only
// the policies it accepts ("namespace/name"). The cost is the window's events
// plus one lookup per series that changed.
func Summarize(ctx context.Context, s Store, q Query, keep func(policy string) bool) (*Summary, error) {
	sum, _, _, err := summarize(ctx, s, q, keep)
	return sum, err
}

// SummarizeWithTrend is Summarize plus the trend of the report r (built from
// in) over the window, reading the window once.
func SummarizeWithTrend(ctx context.Context, s Store, q Query, keep func(policy string) bool, r *compliance.Report, in compliance.Input, steps int) (*Summary, error) {
	sum, window, before, err := summarize(ctx, s, q, keep)
	if err != nil {
		return nil, err
	}
	sum.Trend = BuildTrend(TrendInput{Report: r, Current: CurrentStates(in), Window: window, Before: before, From: q.Since, Steps: steps})
	return sum, nil
}

func summarize(ctx context.Context, s Store, q Query, keep func(policy string) bool) (*Summary, []Event, []Event, error) {
	window, err := s.Events(ctx, q)
	if err != nil {
		return nil, nil, nil, err
	}
	window = keepPolicies(window, keep)
	before, err := s.Latest(ctx, q.Since, pairsOf(window))
	if err != nil {
		return nil, nil, nil, err
	}
	sum := &Summary{Since: q.Since, Changes: transitionsFrom(window, before)}
	if sum.Remediations, err = remediated(ctx, s, sum.Changes, q.Since); err != nil {
		return nil, nil, nil, err
	}
	var total time.Duration
	for _, r := range sum.Remediations {
		total += r.Duration
	}
	if n := len(sum.Remediations); n > 0 {
		sum.MeanTimeToRemediate = total / time.Duration(n)
	}
	byCluster := map[string]*ClusterChange{}
	get := func(c string) *ClusterChange {
		if byCluster[c] == nil {
			byCluster[c] = &ClusterChange{Cluster: c}
		}
		return byCluster[c]
	}
	for _, t := range sum.Changes {
		cc := get(t.Cluster)
		cc.Changes++
		if t.State == compliance.NonCompliant && t.Time.After(cc.LastBecameNonCompliant) {
			cc.LastBecameNonCompliant = t.Time
		}
	}
	for _, r := range sum.Remediations {
		get(r.Cluster).Remediated++
	}
	for _, cc := range byCluster {
		sum.Clusters = append(sum.Clusters, *cc)
	}
	sort.Slice(sum.Clusters, func(i, j int) bool { return sum.Clusters[i].Cluster < sum.Clusters[j].Cluster })
	if sum.Changes == nil {
		sum.Changes = []Transition{}
	}
	if sum.Remediations == nil {
		sum.Remediations = []Remediation{}
	}
	if sum.Clusters == nil {
		sum.Clusters = []ClusterChange{}
	}
	return sum, window, before, nil
}

// transitionsFrom keeps the window's events that change their series' state,
// the state before the window coming from before.
func transitionsFrom(window, before []Event) []Transition {
	last := map[Key]compliance.State{}
	for _, e := range before {
		last[e.Key()] = e.State
	}
	var out []Transition
	for _, e := range window {
		prev, seen := last[e.Key()]
		if !seen || prev != e.State {
			out = append(out, Transition{Event: e, From: prev})
		}
		last[e.Key()] = e.State
	}
	return out
}

// remediated pairs each NonCompliant -> Compliant change with the change to
// NonCompliant that opened it: in the window when there is one, else found by
// reading that one series.
func remediated(ctx context.Context, s Store, changes []Transition, since time.Time) ([]Remediation, error) {
	open := map[Key]time.Time{}
	var out []Remediation
	for _, t := range changes {
		switch {
		case t.State == compliance.NonCompliant:
			open[t.Key()] = t.Time
		case t.State == compliance.Compliant && t.From == compliance.NonCompliant:
			start, ok := open[t.Key()]
			if !ok {
				k := t.Key()
				series, err := s.Events(ctx, Query{Policy: k.Policy, Template: k.Template, Cluster: k.Cluster})
				if err != nil {
					return nil, err
				}
				for _, st := range Transitions(series) {
					if st.Time.Before(since) && st.State == compliance.NonCompliant {
						start, ok = st.Time, true
					}
				}
			}
			delete(open, t.Key())
			if ok {
				out = append(out, Remediation{Key: t.Key(), NonCompliantAt: start, CompliantAt: t.Time, Duration: t.Time.Sub(start)})
			}
		}
	}
	return out, nil
}
