package history

import (
	"context"
	"time"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance"
)

// Point is the number of clusters in each state at one time.
type Point struct {
	Time time.Time `json:"time"`
	compliance.Counts
}

// ControlTrend is one control's counts over time.
type ControlTrend struct {
	Standard string  `json:"standard"`
	Family   string  `json:"family"`
	Control  string  `json:"control"`
	Points   []Point `json:"points"`
}

// Trend is the compliance of the report's controls over a window: the
// control × cluster results at evenly spaced times from From to To (the
// report's time), per control and in total.
type Trend struct {
	From     time.Time      `json:"from"`
	To       time.Time      `json:"to"`
	Total    []Point        `json:"total"`
	Controls []ControlTrend `json:"controls"`
}

// TrendInput is what BuildTrend reads.
type TrendInput struct {
	// Report is the compliance now; its controls, policies and clusters are
	// the trend's.
	Report *compliance.Report
	// Current is each root policy's state on each cluster now (CurrentStates).
	Current *States
	// Window holds the events from From on, oldest first.
	Window []Event
	// Before holds the newest event before From of every template of the
	// pairs in Window (Store.Latest).
	Before []Event
	From   time.Time
	// Steps is the number of intervals; the trend has Steps+1 points. Default 30.
	Steps int
}

// States is each root policy's state on each cluster: a row of states per
// policy, indexed by cluster (a few bytes per cell, not a map entry).
type States struct {
	cluster map[string]int
	policy  map[string][]compliance.State
}

// Of is the policy's state on the cluster, "" when it has none.
func (s *States) Of(pc PolicyCluster) compliance.State {
	if s == nil {
		return ""
	}
	i, ok := s.cluster[pc.Cluster]
	row := s.policy[pc.Policy]
	if !ok || row == nil {
		return ""
	}
	return row[i]
}

// CurrentStates reads each root policy's state on each cluster from the
// roots' status.
func CurrentStates(in compliance.Input) *States {
	s := &States{cluster: map[string]int{}, policy: make(map[string][]compliance.State, len(in.Roots))}
	for i := range in.Roots {
		for _, st := range in.Roots[i].Status.Status {
			if st != nil && st.ClusterName != "" {
				if _, ok := s.cluster[st.ClusterName]; !ok {
					s.cluster[st.ClusterName] = len(s.cluster)
				}
			}
		}
	}
	for i := range in.Roots {
		p := &in.Roots[i]
		var row []compliance.State
		for _, st := range p.Status.Status {
			if st == nil || st.ClusterName == "" {
				continue
			}
			if row == nil {
				row = make([]compliance.State, len(s.cluster))
			}
			row[s.cluster[st.ClusterName]] = stateOfCompliance(st.ComplianceState)
		}
		if row != nil {
			s.policy[p.Namespace+"/"+p.Name] = row
		}
	}
	return s
}

func stateOfCompliance(s policyv1.ComplianceState) compliance.State {
	switch s {
	case policyv1.Compliant:
		return compliance.Compliant
	case policyv1.NonCompliant:
		return compliance.NonCompliant
	case policyv1.Pending:
		return compliance.Pending
	}
	return compliance.Unknown
}

// BuildTrend computes the trend. It walks back from the current state: a
// policy with no event in the window on a cluster had its current state all
// along; one with events had, at each time, the worst state of its templates
// (each template's last event at or before that time, else its last event
// before the window). Work is proportional to the report's cells plus the
// window's events, not to the whole history.
func BuildTrend(in TrendInput) *Trend {
	steps := in.Steps
	if steps <= 0 {
		steps = 30
	}
	r := in.Report
	to := r.GeneratedAt
	times := make([]time.Time, steps+1)
	// span*i/steps without overflow: a window of years times 30 steps
	// passes the int64 nanoseconds a Duration holds.
	span, n := int64(to.Sub(in.From)), int64(steps)
	for i := range times {
		k := int64(i)
		times[i] = in.From.Add(time.Duration(span/n*k + span%n*k/n))
	}
	// The last point is the report's time even when the window is wider
	// than a Duration (Sub saturates).
	times[steps] = to
	changed := timelines(in.Window, in.Before)
	changedClusters := map[string][]string{} // policy -> clusters with window events
	for pc := range changed {
		changedClusters[pc.Policy] = append(changedClusters[pc.Policy], pc.Cluster)
	}
	inReport := map[string]bool{}
	for _, c := range r.Clusters {
		inReport[c] = true
	}

	t := &Trend{From: in.From, To: to, Total: newPoints(times)}
	worst := make([]compliance.State, len(times)) // a cluster's state at each time
	for _, s := range r.Standards {
		for _, f := range s.Families {
			for _, c := range f.Controls {
				ct := ControlTrend{Standard: s.Name, Family: f.Label(), Control: c.Label(), Points: newPoints(times)}
				var constant compliance.Counts
				moving := map[string]bool{}
				for _, p := range c.Policies {
					for _, k := range changedClusters[p] {
						if inReport[k] {
							moving[k] = true
						}
					}
				}
				for _, cell := range c.Clusters {
					if !moving[cell.Cluster] {
						addState(&constant, cell.State)
					}
				}
				for k := range moving {
					clear(worst)
					var still compliance.State // the worst of the policies without events here
					for _, p := range c.Policies {
						pc := PolicyCluster{p, k}
						if tl, ok := changed[pc]; ok {
							tl.worsen(worst, times)
							continue
						}
						still = worse(still, in.Current.Of(pc))
					}
					for i, w := range worst {
						if w = worse(w, still); w != "" {
							addState(&ct.Points[i].Counts, w)
						}
					}
				}
				for i := range ct.Points {
					ct.Points[i].Compliant += constant.Compliant
					ct.Points[i].NonCompliant += constant.NonCompliant
					ct.Points[i].Pending += constant.Pending
					t.Total[i].Compliant += ct.Points[i].Compliant
					t.Total[i].NonCompliant += ct.Points[i].NonCompliant
					t.Total[i].Pending += ct.Points[i].Pending
				}
				t.Controls = append(t.Controls, ct)
			}
		}
	}
	return t
}

func newPoints(times []time.Time) []Point {
	out := make([]Point, len(times))
	for i, t := range times {
		out[i].Time = t
	}
	return out
}

func addState(c *compliance.Counts, s compliance.State) {
	switch s {
	case compliance.Compliant:
		c.Compliant++
	case compliance.NonCompliant:
		c.NonCompliant++
	default:
		c.Pending++
	}
}

func rank(s compliance.State) int {
	switch s {
	case compliance.NonCompliant:
		return 4
	case compliance.Pending:
		return 3
	case compliance.Unknown:
		return 2
	case compliance.Compliant:
		return 1
	}
	return 0 // "": not placed
}

// worse is the state that wins under OCM's precedence; "" loses to any.
func worse(a, b compliance.State) compliance.State {
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// timeline is a policy's templates' states on one cluster over the window.
type timeline struct {
	templates []templateLine // a few: found by name
}

type templateLine struct {
	name    string
	initial compliance.State // before the window ("" when none)
	changes []change         // in the window, oldest first
}

// change is a template's state from a time on.
type change struct {
	at    time.Time
	state compliance.State
}

func (tl *timeline) line(template string) *templateLine {
	for i := range tl.templates {
		if tl.templates[i].name == template {
			return &tl.templates[i]
		}
	}
	tl.templates = append(tl.templates, templateLine{name: template})
	return &tl.templates[len(tl.templates)-1]
}

func timelines(window, before []Event) map[PolicyCluster]*timeline {
	out := make(map[PolicyCluster]*timeline, len(before))
	for _, e := range window {
		pc := PolicyCluster{e.Policy, e.Cluster}
		tl := out[pc]
		if tl == nil {
			tl = &timeline{}
			out[pc] = tl
		}
		l := tl.line(e.Template)
		l.changes = append(l.changes, change{e.Time, e.State})
	}
	for _, e := range before {
		if tl := out[PolicyCluster{e.Policy, e.Cluster}]; tl != nil {
			tl.line(e.Template).initial = e.State
		}
	}
	return out
}

// worsen makes worst[i] the worse of itself and the policy's state at
// times[i] (the worst state of its templates then; "" for a template with no
// state yet). times ascend.
func (tl *timeline) worsen(worst []compliance.State, times []time.Time) {
	for _, l := range tl.templates {
		j := 0 // changes at or before the current time
		for i, t := range times {
			for j < len(l.changes) && !l.changes[j].at.After(t) {
				j++
			}
			s := l.initial
			if j > 0 {
				s = l.changes[j-1].state
			}
			worst[i] = worse(worst[i], s)
		}
	}
}

// LoadTrend reads the window's events from the store and builds the trend of
// the report from `from` to the report's time. keep, when set, keeps only the
// events of the policies it accepts ("namespace/name").
func LoadTrend(ctx context.Context, s Store, r *compliance.Report, in compliance.Input, from time.Time, steps int, keep func(policy string) bool) (*Trend, error) {
	window, priors, _, err := readWindow(ctx, s, Query{Since: from}, keep)
	if err != nil {
		return nil, err
	}
	return BuildTrend(TrendInput{Report: r, Current: CurrentStates(in), Window: window, Before: priorEvents(priors), From: from, Steps: steps}), nil
}

func keepPolicies(events []Event, keep func(string) bool) []Event {
	if keep == nil {
		return events
	}
	out := events[:0:0]
	for _, e := range events {
		if keep(e.Policy) {
			out = append(out, e)
		}
	}
	return out
}
