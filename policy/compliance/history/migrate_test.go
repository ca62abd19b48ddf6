package history

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance"
)

// TestMigrateWholeSecondHistory opens a database written before migration 5
// (whole-second times, no order within a second, no chain) holding the demo's
// case read wrong: NonCompliant and Compliant in one second. It migrates; the
// replica, read again at the hub's start, gives both entries to the
// microsecond, which replace their whole-second twins, and the history then
// reads right and verifies.
func TestMigrateWholeSecondHistory(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "compliance.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_us BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for v, m := range migrations[:4] {
		for _, stmt := range strings.Split(m, ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := db.Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Exec(`INSERT INTO schema_migrations VALUES (?, 0)`, v+1); err != nil {
			t.Fatal(err)
		}
	}
	sec := time.Date(2026, 11, 20, 5, 46, 10, 0, time.UTC)
	nc := "NonCompliant; violation - namespaces [demo] not found"
	c := "Compliant; notification - namespaces [demo] was created successfully"
	for _, r := range []struct {
		state, msg string
		at         time.Time
	}{{"Compliant", "Compliant; notification - namespaces [demo] found as specified", sec.Add(-time.Minute)}, {"NonCompliant", nc, sec}, {"Compliant", c, sec}} {
		if _, err := db.Exec(`INSERT INTO compliance_events VALUES ('policies/p', 'ns', 'cluster2', ?, ?, ?)`, r.state, r.msg, r.at.UnixMicro()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO compliance_series VALUES ('policies/p', 'cluster2', 'ns')`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := s.Verify(ctx)
	if err != nil || !v.OK() || v.Unchained != 3 || v.Events != 0 {
		t.Fatalf("verify after migrating = %+v, %v; want 3 unchained events and nothing broken", v, err)
	}
	// The replica as the hub reads it again at its start: newest first,
	// each entry naming its Event (which carries its nanosecond).
	entry := func(at time.Time, msg string) policyv1.ComplianceHistory {
		return policyv1.ComplianceHistory{LastTimestamp: metav1.NewTime(at.Truncate(time.Second)), Message: msg, EventName: fmt.Sprintf("policies.p.%x", at.UnixNano())}
	}
	rep := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster2", Name: "policies.p", Labels: map[string]string{
		policyv1.RootPolicyLabel: "policies.p", policyv1.ClusterNameLabel: "cluster2"}}}
	rep.Status.Details = []*policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: "ns"}, History: []policyv1.ComplianceHistory{
		entry(sec.Add(700*time.Millisecond), c), entry(sec.Add(200*time.Millisecond), nc),
	}}}
	if _, err := s.Record(ctx, FromReplicas([]policyv1.Policy{rep})...); err != nil {
		t.Fatal(err)
	}
	events, err := s.Events(ctx, Query{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range Transitions(events) {
		got = append(got, string(x.From)+"->"+string(x.State)+"@"+x.Time.Format("05.000"))
	}
	want := []string{"->Compliant@10.000", "Compliant->NonCompliant@10.200", "NonCompliant->Compliant@10.700"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("after the replica's entries: %v, want %v", got, want)
	}
	if events[len(events)-1].State != compliance.Compliant {
		t.Fatalf("newest state %s, want Compliant", events[len(events)-1].State)
	}
	if v, err := s.Verify(ctx); err != nil || !v.OK() || v.Unchained != 1 || v.Events != 2 {
		t.Fatalf("verify = %+v, %v; want 2 chained events, 1 unchained (the older one), whole", v, err)
	}
}
