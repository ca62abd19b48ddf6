package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// step is one thing that happens to the store under test: events recorded
// through it, through another store on the same database (another hub) or
// pruned, then, when window is set, a window read whose answer must equal a
// whole read from a store opened afresh.
type step struct {
	record, other []history.Event
	prune         *int // minutes
	window        *int // the window's start, minutes
	// incremental is whether the store under test must answer from its
	// cache (false: it must read the window whole).
	incremental bool
}

func at(m int) *int { return &m }

// testIncremental checks the window cache (a store keeping its last window
// and catching up with what it records) against the whole read, after every
// step of event sequences: in order, out of order, before the window's start,
// across its edge as the start moves forward, from another writer, pruned.
func testIncremental(t *testing.T, newDB func(t *testing.T) Opener) {
	c, nc, pe := compliance.Compliant, compliance.NonCompliant, compliance.Pending
	e := func(policy, cluster, tmpl string, s compliance.State, minutes int) history.Event {
		return history.Event{Policy: policy, Template: tmpl, Cluster: cluster, State: s,
			Message: fmt.Sprintf("%s; at %d", s, minutes), Time: t0.Add(time.Duration(minutes) * time.Minute)}
	}
	history1 := []history.Event{
		e("ns/p", "east", "a", c, 0), e("ns/p", "east", "a", nc, 10), e("ns/p", "east", "b", c, 12),
		e("ns/p", "west", "a", nc, 5), e("ns/p", "west", "a", nc, 20), e("ns/q", "east", "a", pe, 15),
		e("ns/p", "east", "a", c, 40), e("ns/q", "east", "a", nc, 45), e("ns/p", "west", "a", c, 50),
	}
	tests := map[string][]step{
		"in order as the start moves forward": {
			{record: history1, window: at(30)},
			{record: []history.Event{e("ns/p", "east", "a", nc, 60)}, window: at(30), incremental: true},
			{window: at(42), incremental: true}, // ns/p east keeps events: its priors move; ns/q east moves too
			{window: at(55), incremental: true}, // only ns/p east is left
			{record: []history.Event{e("ns/p", "west", "a", nc, 70)}, window: at(55), incremental: true}, // back in: its priors are read
			{window: at(65), incremental: true},
			{window: at(90), incremental: true}, // empty
			{record: []history.Event{e("ns/q", "east", "a", c, 95)}, window: at(90), incremental: true},
		},
		"out of order: before the start, later than the prior": {
			{record: history1, window: at(30)},
			{record: []history.Event{e("ns/p", "east", "a", pe, 25), e("ns/p", "east", "b", nc, 28)}, window: at(30), incremental: true},
			{record: []history.Event{e("ns/p", "east", "b", nc, 29)}, window: at(30), incremental: true}, // extends b's run
			{window: at(41), incremental: true},
		},
		"out of order: before the prior of a NonCompliant series": {
			{record: history1, window: at(30)}, // ns/p west a: NonCompliant since 5
			{record: []history.Event{e("ns/p", "west", "a", c, 7)}, window: at(30), incremental: true},                                 // since moves to 20
			{record: []history.Event{e("ns/p", "west", "a", nc, 1)}, window: at(30), incremental: true},                                // no change
			{record: []history.Event{e("ns/q", "east", "a", c, 2)}, window: at(30), incremental: true},                                 // before a Pending prior
			{record: []history.Event{e("ns/p", "east", "a", nc, 10)}, window: at(30), incremental: true},                               // a duplicate
			{record: []history.Event{e("ns/p", "east", "c", nc, 3), e("ns/p", "east", "c", nc, 4)}, window: at(30), incremental: true}, // a new template
		},
		"out of order: inside the window, and at the start": {
			{record: history1, window: at(30)},
			{record: []history.Event{e("ns/p", "east", "a", pe, 35), e("ns/p", "west", "a", nc, 30), e("ns/r", "north", "a", nc, 31)}, window: at(30), incremental: true},
			{record: []history.Event{e("ns/p", "east", "a", nc, 35)}, window: at(35), incremental: true}, // a tie at the new start
			{window: at(36), incremental: true},
		},
		"ties in a series": {
			{record: []history.Event{e("ns/p", "east", "a", c, 5), e("ns/p", "east", "a", nc, 5), e("ns/p", "east", "a", c, 40)}, window: at(30)},
			{record: []history.Event{e("ns/p", "east", "a", pe, 20), e("ns/p", "east", "a", nc, 20)}, window: at(30), incremental: true},
			{record: []history.Event{e("ns/p", "east", "a", nc, 40), e("ns/p", "east", "a", pe, 50)}, window: at(40), incremental: true},
			{window: at(41), incremental: true},
		},
		"the start moving back reads whole": {
			{record: history1, window: at(30)},
			{window: at(20)},
			{window: at(25), incremental: true},
		},
		"another writer or a prune reads whole": {
			{record: history1, window: at(30)},
			{other: []history.Event{e("ns/p", "east", "a", pe, 48)}, window: at(30)},
			{record: []history.Event{e("ns/p", "east", "a", c, 49)}, window: at(30), incremental: true},
			{prune: at(30), window: at(30)},
			{prune: at(30), window: at(30), incremental: true},                                         // nothing left to prune: no write
			{other: []history.Event{e("ns/p", "east", "a", c, 49)}, window: at(31), incremental: true}, // a duplicate: no write
		},
	}
	for _, seed := range []uint64{1, 2, 3} {
		tests[fmt.Sprintf("random sequence %d", seed)] = randomSteps(seed)
	}
	names := make([]string, 0, len(tests))
	for name := range tests {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			o := newDB(t) // each case on a database of its own
			runSteps(t, o, open(t, o), tests[name])
		})
	}
}

func runSteps(t *testing.T, o Opener, s history.Store, steps []step) {
	ctx := context.Background()
	for i, st := range steps {
		if len(st.record) > 0 {
			record(t, s, st.record...)
		}
		if len(st.other) > 0 {
			other := open(t, o)
			record(t, other, st.other...)
			other.Close()
		}
		if st.prune != nil {
			if _, err := s.Prune(ctx, t0.Add(time.Duration(*st.prune)*time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		if st.window == nil {
			continue
		}
		q := history.Query{Since: t0.Add(time.Duration(*st.window) * time.Minute)}
		got, err := s.Window(ctx, q)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		fresh := open(t, o)
		want, err := fresh.Window(ctx, q)
		fresh.Close()
		if err != nil {
			t.Fatalf("step %d: fresh store: %v", i, err)
		}
		if want.Incremental {
			t.Fatalf("step %d: a store opened afresh answered from a cache", i)
		}
		if g, w := describeEvents(got.Events), describeEvents(want.Events); !reflect.DeepEqual(g, w) {
			t.Fatalf("step %d (start %d): events\n%s\nwant (whole read)\n%s", i, *st.window, strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
		if g, w := describePriors(got.Before), describePriors(want.Before); !reflect.DeepEqual(g, w) {
			t.Fatalf("step %d (start %d): priors\n%s\nwant (whole read)\n%s", i, *st.window, strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
		if got.Incremental != st.incremental {
			t.Fatalf("step %d: incremental = %v, want %v", i, got.Incremental, st.incremental)
		}
	}
}

// randomSteps records random events (times before, at, inside and after the
// window's start, states and templates at random, duplicates included) and
// moves the start forward by random amounts.
func randomSteps(seed uint64) []step {
	rng := rand.New(rand.NewPCG(seed, 7))
	states := []compliance.State{compliance.Compliant, compliance.NonCompliant, compliance.Pending, compliance.Unknown}
	var steps []step
	var all []history.Event
	start := 100
	for i := 0; i < 40; i++ {
		var batch []history.Event
		for n := rng.IntN(6); n > 0; n-- {
			if len(all) > 0 && rng.IntN(8) == 0 {
				batch = append(batch, all[rng.IntN(len(all))]) // a duplicate
				continue
			}
			m := start - 60 + rng.IntN(150) // up to 60 minutes before the start
			if rng.IntN(6) == 0 {
				m = start // at the start
			}
			s := states[rng.IntN(len(states))]
			ev := history.Event{Policy: fmt.Sprintf("ns/p%d", rng.IntN(3)), Template: fmt.Sprintf("t%d", rng.IntN(2)), Cluster: fmt.Sprintf("c%d", rng.IntN(3)),
				State: s, Message: fmt.Sprintf("%s; m%d", s, rng.IntN(2)), Time: t0.Add(time.Duration(m) * time.Minute)}
			batch = append(batch, ev)
		}
		all = append(all, batch...)
		if rng.IntN(4) == 0 {
			start += rng.IntN(20)
		}
		steps = append(steps, step{record: batch, window: at(start), incremental: i > 0})
	}
	return steps
}

func describeEvents(events []history.Event) []string {
	out := []string{}
	for _, e := range events {
		out = append(out, describe(e))
	}
	return out
}

func describePriors(priors []history.Prior) []string {
	out := []string{}
	for _, p := range priors {
		since := "-"
		if !p.NonCompliantSince.IsZero() {
			since = fmt.Sprint(int(p.NonCompliantSince.Sub(t0) / time.Minute))
		}
		out = append(out, describe(p.Event)+" since "+since)
	}
	sort.Strings(out)
	return out
}

func describe(e history.Event) string {
	return fmt.Sprintf("%d %s/%s/%s %s %q", int(e.Time.Sub(t0)/time.Minute), e.Policy, e.Template, e.Cluster, e.State, e.Message)
}
