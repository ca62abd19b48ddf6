package history_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// trendFleet is policies mapped to controls, their current state per cluster
// (the roots' status), the window's events and the events before it.
type trendFleet struct {
	controls map[string]string            // policy -> control ("AC-1")
	current  map[string]map[string]string // policy -> cluster -> state
	window   []history.Event
	before   []history.Event
}

func (f trendFleet) input(now time.Time) compliance.Input {
	in := compliance.Input{Now: now}
	for _, p := range sortedKeys(f.controls) {
		ctl := f.controls[p]
		root := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: p, Annotations: map[string]string{
			policyv1.StandardsAnnotation:  "NIST SP 800-53",
			policyv1.CategoriesAnnotation: ctl[:2] + " Family",
			policyv1.ControlsAnnotation:   ctl + " Control",
		}}}
		for _, c := range sortedKeys(f.current[p]) {
			root.Status.Status = append(root.Status.Status, &policyv1.CompliancePerClusterStatus{
				ClusterName: c, ClusterNamespace: c, ComplianceState: policyv1.ComplianceState(f.current[p][c])})
		}
		in.Roots = append(in.Roots, root)
	}
	return in
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out { // small maps: insertion sort
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

var stateRank = map[compliance.State]int{compliance.NonCompliant: 4, compliance.Pending: 3, compliance.Unknown: 2, compliance.Compliant: 1}

// definition is the trend by its definition: at each time, a policy's state
// on a cluster is, when the pair has events in the window, the worst of its
// templates' states then (each template's last event at or before the time,
// else its last event before the window); else its current state. A control
// on a cluster is the worst of its policies; clusters where it has none are
// not counted.
func definition(f trendFleet, r *compliance.Report, times []time.Time) map[string][]compliance.Counts {
	changed := map[[2]string]bool{}
	for _, e := range f.window {
		changed[[2]string{e.Policy, e.Cluster}] = true
	}
	stateAt := func(policy, cluster string, t time.Time) compliance.State {
		if !changed[[2]string{policy, cluster}] {
			if s, ok := f.current[policy[len("ns/"):]][cluster]; ok {
				return compliance.State(s)
			}
			return ""
		}
		last := map[string]compliance.State{}
		for _, e := range f.before {
			if e.Policy == policy && e.Cluster == cluster {
				last[e.Template] = e.State
			}
		}
		for _, e := range f.window { // oldest first
			if e.Policy == policy && e.Cluster == cluster && !e.Time.After(t) {
				last[e.Template] = e.State
			}
		}
		var worst compliance.State
		for _, s := range last {
			if stateRank[s] > stateRank[worst] {
				worst = s
			}
		}
		return worst
	}
	out := map[string][]compliance.Counts{}
	for _, s := range r.Standards {
		for _, fam := range s.Families {
			for _, c := range fam.Controls {
				counts := make([]compliance.Counts, len(times))
				for i, t := range times {
					for _, k := range r.Clusters {
						var worst compliance.State
						for _, p := range c.Policies {
							if st := stateAt(p, k, t); stateRank[st] > stateRank[worst] {
								worst = st
							}
						}
						switch worst {
						case "":
						case compliance.Compliant:
							counts[i].Compliant++
						case compliance.NonCompliant:
							counts[i].NonCompliant++
						default:
							counts[i].Pending++
						}
					}
				}
				out[c.Label()] = counts
			}
		}
	}
	return out
}

// TestBuildTrend checks the trend (compliance of each control over time)
// against its definition, on hand-made cases and random fleets, and pins
// the counts of one case by hand.
func TestBuildTrend(t *testing.T) {
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	now := from.Add(10 * time.Hour)
	ev := func(policy, tmpl, cluster string, s compliance.State, hours float64) history.Event {
		return history.Event{Policy: "ns/" + policy, Template: tmpl, Cluster: cluster, State: s, Message: string(s), Time: from.Add(time.Duration(hours * float64(time.Hour)))}
	}
	c, nc, pe := compliance.Compliant, compliance.NonCompliant, compliance.Pending
	tests := map[string]struct {
		fleet trendFleet
		// want pins AC-1's counts at the 11 hourly points (NonCompliant, else
		// Compliant, else Pending: "N", "C", "P", "-" when not counted) on
		// cluster east.
		want string
	}{
		"no events: the current state all along": {
			fleet: trendFleet{controls: map[string]string{"p": "AC-1"}, current: map[string]map[string]string{"p": {"east": "NonCompliant", "west": "Compliant"}}},
			want:  "NNNNNNNNNNN",
		},
		"NonCompliant for a while, the prior before": {
			fleet: trendFleet{controls: map[string]string{"p": "AC-1"}, current: map[string]map[string]string{"p": {"east": "Compliant"}},
				before: []history.Event{ev("p", "a", "east", c, -5)},
				window: []history.Event{ev("p", "a", "east", nc, 2.5), ev("p", "a", "east", c, 6)}},
			want: "CCCNNNCCCCC",
		},
		"two templates: the worst": {
			fleet: trendFleet{controls: map[string]string{"p": "AC-1"}, current: map[string]map[string]string{"p": {"east": "NonCompliant"}},
				before: []history.Event{ev("p", "a", "east", c, -5), ev("p", "b", "east", pe, -1)},
				window: []history.Event{ev("p", "b", "east", c, 3), ev("p", "a", "east", nc, 8)}},
			want: "PPPCCCCCNNN",
		},
		"two policies on a control: the worst; a template first seen in the window": {
			fleet: trendFleet{controls: map[string]string{"p": "AC-1", "q": "AC-1"}, current: map[string]map[string]string{"p": {"east": "Compliant"}, "q": {"east": "NonCompliant"}},
				window: []history.Event{ev("p", "a", "east", c, 1), ev("q", "a", "east", nc, 4), ev("q", "a", "east", c, 5), ev("q", "a", "east", nc, 9)}},
			want: "-CCCNCCCCNN",
		},
		"an event at a point counts from that point": {
			fleet: trendFleet{controls: map[string]string{"p": "AC-1"}, current: map[string]map[string]string{"p": {"east": "Compliant"}},
				before: []history.Event{ev("p", "a", "east", nc, -1)},
				window: []history.Event{ev("p", "a", "east", c, 0), ev("p", "a", "east", nc, 10)}},
			want: "CCCCCCCCCCN",
		},
	}
	for seed := uint64(1); seed <= 5; seed++ {
		tests[fmt.Sprintf("random fleet %d", seed)] = struct {
			fleet trendFleet
			want  string
		}{fleet: randomTrendFleet(seed, from, now)}
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := tc.fleet.input(now)
			r := compliance.Build(in, compliance.Filter{})
			trend := history.BuildTrend(history.TrendInput{Report: r, Current: history.CurrentStates(in),
				Window: tc.fleet.window, Before: tc.fleet.before, From: from, Steps: 10})
			times := make([]time.Time, len(trend.Total))
			for i, p := range trend.Total {
				times[i] = p.Time
			}
			if len(times) != 11 || !times[0].Equal(from) || !times[10].Equal(now) {
				t.Fatalf("points at %v, want 11 from %s to %s", times, from, now)
			}
			want := definition(tc.fleet, r, times)
			var total []compliance.Counts = make([]compliance.Counts, len(times))
			for _, ct := range trend.Controls {
				got := make([]compliance.Counts, len(ct.Points))
				for i, p := range ct.Points {
					got[i] = p.Counts
					total[i].Compliant += p.Compliant
					total[i].NonCompliant += p.NonCompliant
					total[i].Pending += p.Pending
				}
				if !reflect.DeepEqual(got, want[ct.Control]) {
					t.Errorf("%s: %v, the definition says %v", ct.Control, got, want[ct.Control])
				}
				delete(want, ct.Control)
			}
			if len(want) > 0 {
				t.Errorf("controls missing from the trend: %v", want)
			}
			for i, p := range trend.Total {
				if p.Counts != total[i] {
					t.Errorf("total at %d = %+v, the controls sum to %+v", i, p.Counts, total[i])
				}
			}
			if tc.want == "" {
				return
			}
			east := tc.fleet
			east.current = map[string]map[string]string{}
			for p, byCluster := range tc.fleet.current {
				east.current[p] = map[string]string{"east": byCluster["east"]}
			}
			var got []byte
			for _, ct := range history.BuildTrend(history.TrendInput{Report: compliance.Build(east.input(now), compliance.Filter{}), Current: history.CurrentStates(east.input(now)),
				Window: east.window, Before: east.before, From: from, Steps: 10}).Controls {
				for _, p := range ct.Points {
					switch {
					case p.NonCompliant > 0:
						got = append(got, 'N')
					case p.Compliant > 0:
						got = append(got, 'C')
					case p.Pending > 0:
						got = append(got, 'P')
					default:
						got = append(got, '-')
					}
				}
			}
			if string(got) != tc.want {
				t.Errorf("AC-1 on east over time = %s, want %s", got, tc.want)
			}
		})
	}
}

// randomTrendFleet: 6 policies on 3 controls, 4 clusters, templates a and
// b, events at random times before and in the window (the current state the
// last event's when there is one).
func randomTrendFleet(seed uint64, from, now time.Time) trendFleet {
	rng := rand.New(rand.NewPCG(seed, 11))
	states := []compliance.State{compliance.Compliant, compliance.NonCompliant, compliance.Pending, compliance.Unknown}
	f := trendFleet{controls: map[string]string{}, current: map[string]map[string]string{}}
	span := now.Sub(from)
	for p := 0; p < 6; p++ {
		name := fmt.Sprintf("p%d", p)
		f.controls[name] = []string{"AC-1", "AC-2", "CM-2"}[p%3]
		f.current[name] = map[string]string{}
		for k := 0; k < 4; k++ {
			cluster := fmt.Sprintf("c%d", k)
			if rng.IntN(5) == 0 {
				continue // not placed
			}
			last := states[rng.IntN(len(states))]
			for _, tmpl := range []string{"a", "b"} {
				if rng.IntN(2) == 0 {
					s := states[rng.IntN(len(states))]
					f.before = append(f.before, history.Event{Policy: "ns/" + name, Template: tmpl, Cluster: cluster, State: s, Time: from.Add(-time.Hour)})
				}
			}
			var evs []history.Event
			for n := rng.IntN(4); n > 0; n-- {
				s := states[rng.IntN(len(states))]
				evs = append(evs, history.Event{Policy: "ns/" + name, Template: []string{"a", "b"}[rng.IntN(2)], Cluster: cluster, State: s,
					Time: from.Add(time.Duration(rng.Int64N(int64(span))))})
			}
			for i := range evs { // oldest first
				for j := i; j > 0 && evs[j].Time.Before(evs[j-1].Time); j-- {
					evs[j], evs[j-1] = evs[j-1], evs[j]
				}
			}
			if len(evs) > 0 {
				last = evs[len(evs)-1].State
			}
			f.current[name][cluster] = string(last)
			f.window = append(f.window, evs...)
		}
	}
	for i := range f.window { // the window oldest first
		for j := i; j > 0 && f.window[j].Time.Before(f.window[j-1].Time); j-- {
			f.window[j], f.window[j-1] = f.window[j-1], f.window[j]
		}
	}
	return f
}

// TestTrendWideWindow: a window as wide as a time can hold (since
// 0001-01-01) still gives points in order from From to now; span*i used to
// overflow a Duration.
func TestTrendWideWindow(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, from := range []time.Time{now.Add(-72 * time.Hour), now.AddDate(-20, 0, 0), {}} {
		tr := history.BuildTrend(history.TrendInput{Report: &compliance.Report{GeneratedAt: now}, From: from})
		require.NotNil(t, tr)
		p := tr.Total
		require.Len(t, p, 31)
		assert.True(t, p[0].Time.Equal(from), "first point %s", p[0].Time)
		assert.True(t, p[30].Time.Equal(now), "last point %s", p[30].Time)
		for i := 1; i < len(p); i++ {
			assert.True(t, p[i].Time.After(p[i-1].Time), "point %d (%s) after point %d (%s)", i, p[i].Time, i-1, p[i-1].Time)
		}
	}
}

func TestParseSinceRefuses(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]string{
		"":           "since: empty",
		"99999999d":  `since "99999999d": more than 106751d back`,
		"9999999w":   `since "9999999w": more than 15250w back`,
		"-3d":        `since "-3d": not a duration`,
		"soon":       `since "soon": not a duration`,
		"2026-13-01": `since "2026-13-01": not a duration`,
		"106751d":    "",
		"2026-11-01": "",
		"1h30m":      "",
	} {
		_, err := history.ParseSince(in, now)
		if want == "" {
			assert.NoError(t, err, in)
			continue
		}
		assert.ErrorContains(t, err, want, in)
	}
}
