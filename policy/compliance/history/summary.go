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
	// Incremental is set when the store answered from its window cache
	// (Window.Incremental); not part of the schema.
	Incremental bool `json:"-"`
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
// plus the newest event before it of each series that changed, read in
// a constant number of queries.
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
	window, priors, incremental, err := readWindow(ctx, s, q, keep)
	if err != nil {
		return nil, nil, nil, err
	}
	before := priorEvents(priors)
	sum := &Summary{Since: q.Since, Changes: transitionsFrom(window, before), Incremental: incremental}
	sum.Remediations = remediated(sum.Changes, priors)
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
	last := make(map[Key]compliance.State, len(before)+len(window)/4)
	for _, e := range before {
		last[e.Key()] = e.State
	}
	out := make([]Transition, 0, len(window))
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
// NonCompliant that opened it: in the window when there is one, else the
// series' last change to NonCompliant before the window (from its prior).
func remediated(changes []Transition, priors []Prior) []Remediation {
	openedBefore := make(map[Key]time.Time, len(priors)/4)
	for _, p := range priors {
		if !p.NonCompliantSince.IsZero() {
			openedBefore[p.Key()] = p.NonCompliantSince
		}
	}
	open := map[Key]time.Time{}
	var out []Remediation
	for _, t := range changes {
		switch {
		case t.State == compliance.NonCompliant:
			open[t.Key()] = t.Time
		case t.State == compliance.Compliant && t.From == compliance.NonCompliant:
			start, ok := open[t.Key()]
			if !ok {
				start, ok = openedBefore[t.Key()]
			}
			delete(open, t.Key())
			if ok {
				out = append(out, Remediation{Key: t.Key(), NonCompliantAt: start, CompliantAt: t.Time, Duration: t.Time.Sub(start)})
			}
		}
	}
	return out
}

// readWindow reads the window q selects, keeps the policies keep accepts
// (all when keep is nil) and the priors of the pairs kept.
func readWindow(ctx context.Context, s Store, q Query, keep func(policy string) bool) ([]Event, []Prior, bool, error) {
	w, err := s.Window(ctx, q)
	if err != nil {
		return nil, nil, false, err
	}
	if keep == nil {
		return w.Events, w.Before, w.Incremental, nil
	}
	window := keepPolicies(w.Events, keep)
	pairs := map[PolicyCluster]bool{}
	for _, e := range window {
		pairs[PolicyCluster{e.Policy, e.Cluster}] = true
	}
	var priors []Prior
	for _, p := range w.Before {
		if pairs[PolicyCluster{p.Policy, p.Cluster}] {
			priors = append(priors, p)
		}
	}
	return window, priors, w.Incremental, nil
}

func priorEvents(priors []Prior) []Event {
	out := make([]Event, len(priors))
	for i, p := range priors {
		out[i] = p.Event
	}
	return out
}
