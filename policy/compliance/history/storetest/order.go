package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// flip is one compliance event a cluster's engine emitted: its state,
// message and the nanosecond it was created at (its Event's name carries it).
type flip struct {
	state compliance.State
	msg   string
	at    time.Time
}

// entry is the flip as its replica's history lists it: whole seconds, and
// the engine's Event name "<policy>.<hex Unix nanoseconds>".
func (f flip) entry() policyv1.ComplianceHistory {
	return policyv1.ComplianceHistory{LastTimestamp: metav1.NewTime(f.at.Truncate(time.Second)), Message: f.msg,
		EventName: fmt.Sprintf("policies.p.%x", f.at.UnixNano())}
}

// testOrderInvariant is the invariant the history is for: for every series,
// the newest recorded state is the cluster's current state, and the recorded
// transitions, remediations and window priors are the cluster's, even when
// a series flips several times inside one second. Random sequences are
// delivered as the hub gets them: replica snapshots (the ten newest entries,
// whole-second times) and forwarded Events (a microsecond eventTime), in
// random batches and a random order, several times over.
func testOrderInvariant(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 42))
	states := []compliance.State{compliance.Compliant, compliance.NonCompliant, compliance.Pending}
	type series struct {
		cluster, template string
		flips             []flip
	}
	var all []series
	var deliveries [][]history.Event
	for c := range 4 {
		for tm := range 2 {
			sr := series{cluster: fmt.Sprintf("cluster%d", c+1), template: fmt.Sprintf("tmpl-%d", tm)}
			at := t0.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
			prev := compliance.State("")
			for range 5 + rng.IntN(30) {
				// Mostly within the same second: enforce remediates at once.
				if rng.IntN(4) == 0 {
					at = at.Add(time.Duration(1+rng.IntN(3)) * time.Second)
				} else {
					at = at.Add(time.Duration(1+rng.IntN(200_000)) * time.Microsecond)
				}
				st := states[rng.IntN(len(states))]
				if st == prev {
					continue // engines emit on a change
				}
				prev = st
				sr.flips = append(sr.flips, flip{state: st, msg: fmt.Sprintf("%s; check %d", st, rng.IntN(2)), at: at})
			}
			all = append(all, sr)
			rep := replica(sr.cluster)
			rep.Spec.PolicyTemplates = nil
			// Replica snapshots as the status grows, each the ten newest.
			for n := 1; n <= len(sr.flips); n += 1 + rng.IntN(4) {
				d := &policyv1.DetailsPerTemplate{TemplateMeta: metav1.ObjectMeta{Name: sr.template}}
				for i := n - 1; i >= 0 && i >= n-10; i-- {
					d.History = append(d.History, sr.flips[i].entry())
				}
				r := rep.DeepCopy()
				r.Status.Details = []*policyv1.DetailsPerTemplate{d}
				deliveries = append(deliveries, history.FromReplicas([]policyv1.Policy{*r}))
			}
			// Every flip forwarded as a hub Event.
			for _, f := range sr.flips {
				e := hubEvent(rep, sr.template, f)
				ev, err := history.FromHubEvent(&e, rep)
				if err != nil {
					t.Fatal(err)
				}
				deliveries = append(deliveries, []history.Event{ev})
			}
		}
	}
	rng.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
	for len(deliveries) > 0 {
		n := min(len(deliveries), 1+rng.IntN(5))
		var batch []history.Event
		for _, d := range deliveries[:n] {
			batch = append(batch, d...)
		}
		deliveries = deliveries[n:]
		if _, err := s.Record(ctx, batch...); err != nil {
			t.Fatal(err)
		}
	}

	got, err := s.Events(ctx, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	remediated := 0
	for _, sr := range all {
		var want, have []string
		last := compliance.State("")
		inNC := false // a NonCompliant period not yet ended Compliant
		for _, f := range sr.flips {
			want = append(want, fmt.Sprintf("%s@%s", f.state, f.at.Truncate(time.Microsecond).Format("05.000000")))
			switch f.state {
			case compliance.NonCompliant:
				inNC = true
			case compliance.Compliant:
				if inNC {
					remediated++
				}
				inNC = false
			}
			last = f.state
		}
		var newest history.Event
		for _, e := range got {
			if e.Cluster == sr.cluster && e.Template == sr.template {
				have = append(have, fmt.Sprintf("%s@%s", e.State, e.Time.Format("05.000000")))
				newest = e
			}
		}
		if !reflect.DeepEqual(have, want) {
			t.Fatalf("series %s/%s: recorded\n %v\nwant (as the cluster emitted them)\n %v", sr.cluster, sr.template, have, want)
		}
		if newest.State != last {
			t.Fatalf("series %s/%s: newest recorded state %s, the cluster's is %s", sr.cluster, sr.template, newest.State, last)
		}
		// A window starting at each flip: the prior is the state just before.
		for i := 1; i < len(sr.flips); i++ {
			since := sr.flips[i].at.Truncate(time.Microsecond)
			if since.Equal(sr.flips[i-1].at.Truncate(time.Microsecond)) {
				continue
			}
			w, err := s.Window(ctx, history.Query{Cluster: sr.cluster, Policy: "policies/p", Since: since})
			if err != nil {
				t.Fatal(err)
			}
			var prior *history.Prior
			for j := range w.Before {
				if w.Before[j].Template == sr.template {
					prior = &w.Before[j]
				}
			}
			if prior == nil || prior.State != sr.flips[i-1].state {
				t.Fatalf("series %s/%s: the window from flip %d has prior %+v, want state %s", sr.cluster, sr.template, i, prior, sr.flips[i-1].state)
			}
		}
	}
	rem, err := history.Remediations(ctx, s, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rem) != remediated {
		t.Fatalf("%d remediations, the clusters made %d", len(rem), remediated)
	}
	if v, err := s.Verify(ctx); err != nil || !v.OK() {
		t.Fatalf("verify = %+v, %v; want a whole chain", v, err)
	}
}

// replica is policies/p's replica on cluster.
func replica(cluster string) *policyv1.Policy {
	return &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "policies.p", Labels: map[string]string{
		policyv1.RootPolicyLabel: "policies.p", policyv1.ClusterNameLabel: cluster,
	}}}
}

// hubEvent is f as the framework agent forwards it (agent.HubEvents, package policy/agent).
func hubEvent(rep *policyv1.Policy, template string, f flip) corev1.Event {
	at := metav1.NewTime(f.at.Truncate(time.Second))
	return corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: rep.Namespace, Name: rep.Name + ".forwarded"},
		InvolvedObject: corev1.ObjectReference{Kind: "Policy", Namespace: rep.Namespace, Name: rep.Name},
		Reason:         "policy: " + rep.Namespace + "/" + template, Message: f.msg,
		FirstTimestamp: at, LastTimestamp: at, EventTime: metav1.NewMicroTime(f.at),
	}
}

// testDemoSameSecond is the demo's case: an inform policy's check went
// NonCompliant and enforce made it Compliant within the same second. Both
// transitions are recorded in that order, from either source, whichever
// comes first.
func testDemoSameSecond(t *testing.T, o Opener) {
	ctx := context.Background()
	sec := t0.Add(46*time.Minute + 10*time.Second)
	flips := []flip{
		{compliance.Compliant, "Compliant; notification - namespaces [demo] found as specified", sec.Add(-3 * time.Minute)},
		{compliance.NonCompliant, "NonCompliant; violation - namespaces [demo] not found", sec.Add(120 * time.Millisecond)},
		{compliance.Compliant, "Compliant; notification - namespaces [demo] was created successfully", sec.Add(480 * time.Millisecond)},
	}
	for _, first := range []string{"replica", "events"} {
		t.Run(first+" first", func(t *testing.T) {
			s := open(t, o)
			rep := replica("cluster2")
			d := &policyv1.DetailsPerTemplate{TemplateMeta: metav1.ObjectMeta{Name: "ns"}}
			for i := len(flips) - 1; i >= 0; i-- {
				d.History = append(d.History, flips[i].entry())
			}
			rep.Status.Details = []*policyv1.DetailsPerTemplate{d}
			fromReplica := history.FromReplicas([]policyv1.Policy{*rep})
			var fromEvents []history.Event
			for _, f := range slices.Backward(flips) { // newest first: the worst order
				e := hubEvent(rep, "ns", f)
				ev, err := history.FromHubEvent(&e, rep)
				if err != nil {
					t.Fatal(err)
				}
				fromEvents = append(fromEvents, ev)
			}
			if first == "replica" {
				record(t, s, fromReplica...)
				record(t, s, fromEvents...)
			} else {
				for _, e := range fromEvents {
					record(t, s, e)
				}
				record(t, s, fromReplica...)
			}
			tr := history.Transitions(events(t, s, history.Query{}))
			var got []string
			for _, x := range tr {
				got = append(got, string(x.From)+"->"+string(x.State))
			}
			if want := []string{"->Compliant", "Compliant->NonCompliant", "NonCompliant->Compliant"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("transitions %v, want %v", got, want)
			}
			rem, err := history.Remediations(ctx, s, history.Query{})
			if err != nil || len(rem) != 1 || rem[0].Duration != 360*time.Millisecond {
				t.Fatalf("remediations %+v (%v), want one of 360ms", rem, err)
			}
			changed, err := history.ChangedSince(ctx, s, history.Query{Since: sec})
			if err != nil || len(changed) != 2 || changed[1].State != compliance.Compliant {
				t.Fatalf("changed since the second: %+v (%v), want NonCompliant then Compliant", changed, err)
			}
		})
	}
}

// testChain edits, deletes and inserts rows behind the store's back: verify
// names each, and a prune leaves the chain whole.
func testChain(t *testing.T, newDB func(t *testing.T) (Opener, Exec)) {
	ctx := context.Background()
	var exec Exec
	fill := func(t *testing.T) history.Store {
		var o Opener
		o, exec = newDB(t)
		s := open(t, o)
		var evs []history.Event
		for i := range 6 {
			st := compliance.NonCompliant
			if i%2 == 1 {
				st = compliance.Compliant
			}
			evs = append(evs, ev("ns/p", "east", st, i*10), ev("ns/p", "west", st, i*10+1))
		}
		record(t, s, evs...)
		v, err := s.Verify(ctx)
		if err != nil || !v.OK() || v.Events != 12 || v.Series != 2 {
			t.Fatalf("verify after recording = %+v, %v; want 12 events in 2 whole series", v, err)
		}
		h, err := s.Head(ctx)
		if err != nil || h.Seq != 12 || len(h.Hash) != 64 {
			t.Fatalf("head = %+v, %v; want seq 12 and a SHA-256", h, err)
		}
		return s
	}
	broken := func(t *testing.T, s history.Store, want string) {
		t.Helper()
		v, err := s.Verify(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v.OK() || v.Broken == nil || !strings.Contains(v.Broken.String(), want) {
			t.Fatalf("verify = %+v (first %v), want a broken link saying %q", v, v.Broken, want)
		}
		t.Logf("first broken link: %s", v.Broken)
	}
	t.Run("edited", func(t *testing.T) {
		s := fill(t)
		exec(t, `UPDATE compliance_events SET state = 'Compliant', message = 'Compliant; forged' WHERE cluster = 'east' AND seq = (SELECT MIN(seq) FROM compliance_events WHERE cluster = 'east')`)
		broken(t, s, "its content does not match its hash: it was changed")
	})
	t.Run("deleted", func(t *testing.T) {
		s := fill(t)
		exec(t, `DELETE FROM compliance_events WHERE cluster = 'west' AND time_us = ?`, t0.Add(21*time.Minute).UnixMicro())
		broken(t, s, "series ns/p/tmpl on west, event")
	})
	t.Run("newest deleted", func(t *testing.T) {
		s := fill(t)
		exec(t, `DELETE FROM compliance_events WHERE seq = (SELECT MAX(seq) FROM compliance_events)`)
		broken(t, s, "the series' head is not the hash of its newest event")
	})
	t.Run("inserted", func(t *testing.T) {
		s := fill(t)
		// A row in the middle that carries its predecessor's hash as its
		// link, as someone who knows the scheme would write it.
		exec(t, `INSERT INTO compliance_events (policy, template, cluster, state, message, time_us, seq, prev, hash)
			SELECT policy, template, cluster, 'Compliant', 'Compliant; inserted', time_us + 1, 1000, hash, hash FROM compliance_events WHERE cluster = 'east' AND seq = 3`)
		broken(t, s, "series ns/p/tmpl on east, event")
	})
	t.Run("unchained inserted", func(t *testing.T) {
		s := fill(t)
		// A row without a link, as the rows from before the chain: it
		// would sort first among its second and read as a remediation.
		exec(t, `INSERT INTO compliance_events (policy, template, cluster, state, message, time_us) VALUES ('ns/p', 'tmpl', 'east', 'Compliant', 'Compliant; slipped in', ?)`, t0.Add(51*time.Minute).UnixMicro())
		broken(t, s, "unchained rows were added or removed")
	})
	t.Run("pruned stays whole", func(t *testing.T) {
		s := fill(t)
		n, err := s.Prune(ctx, t0.Add(35*time.Minute))
		if err != nil || n != 8 {
			t.Fatalf("prune = %d, %v; want 8", n, err)
		}
		v, err := s.Verify(ctx)
		if err != nil || !v.OK() || v.Events != 4 || v.Base.Seq != 12 {
			t.Fatalf("verify after prune = %+v (%v), %v; want 4 events, whole, the base at event 12", v, v.Broken, err)
		}
		// The base is what the store says; it is not taken as a head it
		// passed through (whoever rewrites the store could set it).
		if v, err := s.Verify(ctx, v.Base.Hash); err != nil || len(v.Found) != 0 {
			t.Fatalf("verify(base) found %v (%v): the base is no proof", v.Found, err)
		}
		record(t, s, ev("ns/p", "east", compliance.NonCompliant, 70))
		if v, err := s.Verify(ctx); err != nil || !v.OK() || v.Head.Seq != 13 {
			t.Fatalf("verify after prune and record = %+v (%v), %v", v, v.Broken, err)
		}
		exec(t, `DELETE FROM compliance_events WHERE cluster = 'east' AND time_us = ?`, t0.Add(40*time.Minute).UnixMicro())
		broken(t, s, "series ns/p/tmpl on east, event")
	})
}
