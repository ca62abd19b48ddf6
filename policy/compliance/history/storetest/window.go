package storetest

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// testWindow checks the window read against the definition: the newest
// event before the window of each template of every pair with window events
// (the last in Events' order on a tie), and when it is NonCompliant the time
// of the series' last change to NonCompliant (history.Transitions over the
// series).
func testWindow(t *testing.T, o Opener) {
	c, nc, pe := compliance.Compliant, compliance.NonCompliant, compliance.Pending
	at := func(tmpl string, s compliance.State, minutes int, msg string) history.Event {
		return history.Event{Policy: "ns/p", Template: tmpl, Cluster: "east", State: s, Message: string(s) + "; " + msg, Time: t0.Add(time.Duration(minutes) * time.Minute)}
	}
	since := 30 // minutes
	tests := map[string]struct {
		events []history.Event
		want   []string // "template state@minute since" (since: minute or "-"), sorted
		// messages appends each prior's message to want's entries.
		messages bool
	}{
		"newest before the window": {
			events: []history.Event{at("a", c, 0, "x"), at("a", nc, 10, "x"), at("a", c, 20, "x"), at("a", nc, 40, "x")},
			want:   []string{"a Compliant@20 -"},
		},
		"a template without window events counts": {
			events: []history.Event{at("a", c, 0, "x"), at("b", nc, 5, "x"), at("a", nc, 35, "x")},
			want:   []string{"a Compliant@0 -", "b NonCompliant@5 5"},
		},
		"no window event, no prior": {
			events: []history.Event{at("a", c, 0, "x")},
			want:   nil,
		},
		"first event in the window": {
			events: []history.Event{at("a", c, 31, "x")},
			want:   nil,
		},
		"a NonCompliant run starts at its first event": {
			events: []history.Event{at("a", c, 0, "x"), at("a", nc, 5, "x"), at("a", nc, 10, "y"), at("a", nc, 20, "z"), at("a", c, 31, "x")},
			want:   []string{"a NonCompliant@20 5"},
		},
		"NonCompliant from the start": {
			events: []history.Event{at("a", nc, 1, "x"), at("a", nc, 2, "y"), at("a", c, 31, "x")},
			want:   []string{"a NonCompliant@2 1"},
		},
		"tie: NonCompliant after Compliant at the same time": {
			events: []history.Event{at("a", c, 5, "x"), at("a", nc, 5, "x"), at("a", c, 31, "x")},
			want:   []string{"a NonCompliant@5 5"},
		},
		"tie: Pending after NonCompliant at the same time": {
			events: []history.Event{at("a", nc, 5, "x"), at("a", pe, 5, "x"), at("a", c, 31, "x")},
			want:   []string{"a Pending@5 -"},
		},
		"tie: a run after Pending at its time starts later": {
			events: []history.Event{at("a", c, 0, "x"), at("a", nc, 5, "x"), at("a", pe, 5, "x"), at("a", nc, 8, "x"), at("a", c, 31, "x")},
			want:   []string{"a NonCompliant@8 8"},
		},
		"tie: a run after Compliant at its time starts then": {
			events: []history.Event{at("a", pe, 0, "x"), at("a", c, 5, "x"), at("a", nc, 5, "x"), at("a", nc, 8, "x"), at("a", c, 31, "x")},
			want:   []string{"a NonCompliant@8 5"},
		},
		"tie: two messages, the one recorded last": {
			events:   []history.Event{at("a", nc, 5, "b"), at("a", nc, 5, "a"), at("a", c, 31, "x")},
			want:     []string{"a NonCompliant@5 5 NonCompliant; a"},
			messages: true,
		},
	}
	s := open(t, o) // one database: each case on a cluster of its own
	names := make([]string, 0, len(tests))
	for name := range tests {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		tc := tests[name]
		cluster := fmt.Sprintf("east-%d", i)
		t.Run(name, func(t *testing.T) {
			var evs []history.Event
			for _, e := range tc.events {
				e.Cluster = cluster
				evs = append(evs, e)
			}
			other := evs[0]
			other.Cluster = "west" // another pair, never in the answer
			record(t, s, append(evs, other)...)
			q := history.Query{Cluster: cluster, Since: t0.Add(time.Duration(since) * time.Minute)}
			w, err := s.Window(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if want := events(t, s, q); !reflect.DeepEqual(withoutSeq(w.Events), want) {
				t.Fatalf("window events = %+v, want %+v (as Events)", w.Events, want)
			}
			got := summarizePriors(w.Before, tc.messages)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("priors = %q, want %q", got, tc.want)
			}
			// The definition, from the whole series.
			all := events(t, s, history.Query{Cluster: cluster})
			var ref []history.Prior
			for _, tmpl := range []string{"a", "b"} {
				var before []history.Event
				for _, e := range all {
					if e.Template == tmpl && e.Time.Before(q.Since) {
						before = append(before, e)
					}
				}
				if len(before) == 0 || len(w.Events) == 0 {
					continue
				}
				p := history.Prior{Event: before[len(before)-1]}
				if p.State == compliance.NonCompliant {
					for _, tr := range history.Transitions(before) {
						if tr.State == compliance.NonCompliant {
							p.NonCompliantSince = tr.Time
						}
					}
				}
				ref = append(ref, p)
			}
			if want := summarizePriors(ref, tc.messages); !reflect.DeepEqual(got, want) {
				t.Fatalf("priors = %q, the definition says %q", got, want)
			}
		})
	}
}

func summarizePriors(priors []history.Prior, withMessage bool) []string {
	var out []string
	for _, p := range priors {
		since := "-"
		if !p.NonCompliantSince.IsZero() {
			since = fmt.Sprint(int(p.NonCompliantSince.Sub(t0) / time.Minute))
		}
		s := fmt.Sprintf("%s %s@%d %s", p.Template, p.State, int(p.Time.Sub(t0)/time.Minute), since)
		if withMessage {
			s += " " + p.Message
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
