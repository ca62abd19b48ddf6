// Package storetest is the test suite every history.Store implementation runs,
// so that SQLite and any other database behave the same.
package storetest

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// Opener opens the same database each time it is called (a restart), fresh for
// the test that made it.
type Opener func() (history.Store, error)

// Run runs the suite; newDB returns an Opener on an empty database.
func Run(t *testing.T, newDB func(t *testing.T) Opener) {
	tests := map[string]func(*testing.T, Opener){
		"RecordIsIdempotent":        testIdempotent,
		"SurvivesRestart":           testRestart,
		"RefusesBadEvents":          testRefuses,
		"EventsFilterAndOrder":      testEvents,
		"LastBecameNonCompliant":    testLastBecameNonCompliant,
		"Remediations":              testRemediations,
		"ChangedSince":              testChangedSince,
		"ReplicaHistoryResumesOnce": testReplicaResume,
		"Latest":                    testLatest,
		"Window":                    testWindow,
		"PruneKeepsNewestOfSeries":  testPrune,
		"OrderInvariant":            testOrderInvariant,
		"DemoSameSecond":            testDemoSameSecond,
	}
	for name, fn := range tests {
		t.Run(name, func(t *testing.T) { fn(t, newDB(t)) })
	}
	t.Run("IncrementalWindowEqualsWholeRead", func(t *testing.T) { testIncremental(t, newDB) })
}

// Exec runs a statement on the database an Opener opens, behind the store's
// back ("?" placeholders).
type Exec func(t *testing.T, stmt string, args ...any)

// RunChain checks that Verify finds rows edited, deleted and inserted behind
// the store's back; newDB returns an Opener on an empty database and a way
// to write to it directly.
func RunChain(t *testing.T, newDB func(t *testing.T) (Opener, Exec)) {
	testChain(t, newDB)
}

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func ev(policy, cluster string, state compliance.State, minutes int) history.Event {
	return history.Event{Policy: policy, Template: "tmpl", Cluster: cluster, State: state,
		Message: string(state) + "; at " + time.Duration(minutes*int(time.Minute)).String(), Time: t0.Add(time.Duration(minutes) * time.Minute)}
}

func open(t *testing.T, o Opener) history.Store {
	t.Helper()
	s, err := o()
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func record(t *testing.T, s history.Store, events ...history.Event) int {
	t.Helper()
	n, err := s.Record(context.Background(), events...)
	if err != nil {
		t.Fatalf("Record: %v", err)
	}
	return n
}

func events(t *testing.T, s history.Store, q history.Query) []history.Event {
	t.Helper()
	out, err := s.Events(context.Background(), q)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	return withoutSeq(out)
}

// withoutSeq is events with Seq cleared, to compare with events as recorded.
func withoutSeq(events []history.Event) []history.Event {
	if events == nil {
		return nil
	}
	out := make([]history.Event, len(events))
	for i, e := range events {
		e.Seq = 0
		out[i] = e
	}
	return out
}

func testIdempotent(t *testing.T, o Opener) {
	s := open(t, o)
	a, b := ev("ns/p", "east", compliance.NonCompliant, 0), ev("ns/p", "east", compliance.Compliant, 5)
	if n := record(t, s, a, b); n != 2 {
		t.Fatalf("first Record added %d, want 2", n)
	}
	if n := record(t, s, a, b, a); n != 0 {
		t.Fatalf("recording the same events again added %d, want 0", n)
	}
	// Sub-microsecond differences are the same stored event.
	c := a
	c.Time = c.Time.Add(300 * time.Nanosecond)
	if n := record(t, s, c); n != 0 {
		t.Fatalf("an event differing below a microsecond added %d, want 0", n)
	}
	// Same time, different message: a different event.
	d := a
	d.Message = "NonCompliant; another reason"
	if n := record(t, s, d); n != 1 {
		t.Fatalf("a different message added %d, want 1", n)
	}
	if got := len(events(t, s, history.Query{})); got != 3 {
		t.Fatalf("%d rows, want 3", got)
	}
}

func testRestart(t *testing.T, o Opener) {
	s, err := o()
	if err != nil {
		t.Fatal(err)
	}
	want := []history.Event{ev("ns/p", "east", compliance.NonCompliant, 0), ev("ns/p", "east", compliance.Compliant, 5)}
	record(t, s, want...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, o) // migrations run again and must change nothing
	if got := events(t, s, history.Query{}); !reflect.DeepEqual(got, want) {
		t.Fatalf("after restart:\n got %+v\nwant %+v", got, want)
	}
	if n := record(t, s, want...); n != 0 {
		t.Fatalf("re-recording after restart added %d, want 0", n)
	}
}

func testRefuses(t *testing.T, o Opener) {
	s := open(t, o)
	good := ev("ns/p", "east", compliance.Compliant, 0)
	bad := good
	bad.Cluster, bad.Time = "", time.Time{}
	n, err := s.Record(context.Background(), good, bad)
	if err == nil || !strings.Contains(err.Error(), "event 1") || !strings.Contains(err.Error(), "cluster, time") {
		t.Fatalf("Record(bad) = %d, %v; want an error naming event 1 and its missing cluster and time", n, err)
	}
	if got := events(t, s, history.Query{}); len(got) != 0 {
		t.Fatalf("a refused batch stored %d events, want none", len(got))
	}
}

func testEvents(t *testing.T, o Opener) {
	s := open(t, o)
	record(t, s,
		ev("ns/b", "west", compliance.Compliant, 10),
		ev("ns/a", "east", compliance.NonCompliant, 10),
		ev("ns/a", "west", compliance.Pending, 0),
		ev("ns/a", "east", compliance.Compliant, 20),
	)
	got := events(t, s, history.Query{})
	var order []string
	for _, e := range got {
		order = append(order, e.Policy+"@"+e.Cluster+"@"+e.Time.Format("15:04"))
	}
	want := []string{"ns/a@west@12:00", "ns/a@east@12:10", "ns/b@west@12:10", "ns/a@east@12:20"}
	if !reflect.DeepEqual(order, want) {
		t.Fatalf("order = %v, want %v", order, want)
	}
	if got := events(t, s, history.Query{Cluster: "east"}); len(got) != 2 {
		t.Fatalf("cluster east: %d events, want 2", len(got))
	}
	if got := events(t, s, history.Query{Policy: "ns/a", Since: t0.Add(10 * time.Minute)}); len(got) != 2 {
		t.Fatalf("ns/a since 12:10: %d events, want 2", len(got))
	}
}

func testLastBecameNonCompliant(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := context.Background()
	record(t, s,
		ev("ns/p", "east", compliance.NonCompliant, 0),
		ev("ns/p", "east", compliance.Compliant, 10),
		ev("ns/p", "east", compliance.NonCompliant, 20),
		ev("ns/p", "east", compliance.NonCompliant, 30), // still NonCompliant: not a new transition
		ev("ns/p", "west", compliance.Compliant, 0),
	)
	at, ok, err := history.LastBecameNonCompliant(ctx, s, history.Query{Cluster: "east"})
	if err != nil || !ok || !at.Equal(t0.Add(20*time.Minute)) {
		t.Fatalf("east = %v, %v, %v; want 12:20", at, ok, err)
	}
	if _, ok, err := history.LastBecameNonCompliant(ctx, s, history.Query{Cluster: "west"}); err != nil || ok {
		t.Fatalf("west never NonCompliant: ok=%v err=%v", ok, err)
	}
}

func testRemediations(t *testing.T, o Opener) {
	s := open(t, o)
	record(t, s,
		ev("ns/p", "east", compliance.NonCompliant, 0),
		ev("ns/p", "east", compliance.NonCompliant, 5),
		ev("ns/p", "east", compliance.Compliant, 45),
		ev("ns/p", "east", compliance.NonCompliant, 60), // still open
		ev("ns/q", "west", compliance.Compliant, 0),
	)
	got, err := history.Remediations(context.Background(), s, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	want := []history.Remediation{{Key: history.Key{Policy: "ns/p", Template: "tmpl", Cluster: "east"},
		NonCompliantAt: t0, CompliantAt: t0.Add(45 * time.Minute), Duration: 45 * time.Minute}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("remediations:\n got %+v\nwant %+v", got, want)
	}
}

func testChangedSince(t *testing.T, o Opener) {
	s := open(t, o)
	record(t, s,
		ev("ns/p", "east", compliance.NonCompliant, 0),
		ev("ns/p", "east", compliance.NonCompliant, 30), // same state as before the date: no change
		ev("ns/p", "east", compliance.Compliant, 40),
		ev("ns/q", "west", compliance.Pending, 35), // first event of its series: a change
	)
	got, err := history.ChangedSince(context.Background(), s, history.Query{Since: t0.Add(30 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, c := range got {
		summary = append(summary, c.Policy+" "+string(c.From)+"->"+string(c.State))
	}
	if want := []string{"ns/q ->Pending", "ns/p NonCompliant->Compliant"}; !reflect.DeepEqual(summary, want) {
		t.Fatalf("changes = %v, want %v", summary, want)
	}
}

func testLatest(t *testing.T, o Opener) {
	s := open(t, o)
	other := ev("ns/p", "east", compliance.NonCompliant, 3)
	other.Template = "other"
	record(t, s,
		ev("ns/p", "east", compliance.NonCompliant, 0),
		ev("ns/p", "east", compliance.Compliant, 5),
		ev("ns/p", "east", compliance.NonCompliant, 10), // at the time: not before it
		other,
		ev("ns/p", "west", compliance.Pending, 1),
		ev("ns/q", "east", compliance.Compliant, 1),
	)
	got, err := s.Latest(context.Background(), t0.Add(10*time.Minute), []history.PolicyCluster{{Policy: "ns/p", Cluster: "east"}, {Policy: "ns/none", Cluster: "east"}})
	if err != nil {
		t.Fatal(err)
	}
	summary := map[string]string{}
	for _, e := range got {
		if e.Policy != "ns/p" || e.Cluster != "east" {
			t.Fatalf("Latest returned %+v: not of the pairs asked", e)
		}
		summary[e.Template] = string(e.State) + "@" + e.Time.Format("15:04")
	}
	if want := map[string]string{"tmpl": "Compliant@12:05", "other": "NonCompliant@12:03"}; !reflect.DeepEqual(summary, want) {
		t.Fatalf("Latest = %v, want %v", summary, want)
	}
	if got, err := s.Latest(context.Background(), t0, nil); err != nil || len(got) != 0 {
		t.Fatalf("Latest(no pairs) = %v, %v; want nothing", got, err)
	}
}

func testPrune(t *testing.T, o Opener) {
	s := open(t, o)
	record(t, s,
		ev("ns/p", "east", compliance.NonCompliant, 0),
		ev("ns/p", "east", compliance.Compliant, 5),
		ev("ns/p", "east", compliance.NonCompliant, 50),
		ev("ns/q", "west", compliance.Compliant, 1), // old but the newest of its series: kept
	)
	n, err := s.Prune(context.Background(), t0.Add(30*time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v; want 2 deleted", n, err)
	}
	var left []string
	for _, e := range events(t, s, history.Query{}) {
		left = append(left, e.Policy+"@"+e.Time.Format("15:04"))
	}
	if want := []string{"ns/q@12:01", "ns/p@12:50"}; !reflect.DeepEqual(left, want) {
		t.Fatalf("after Prune: %v, want %v", left, want)
	}
}
