package storetest

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// testReplicaResume records a replica's history twice, as a hub would after a
// restart, and then the replica's newer history (which keeps the older
// entries): every entry is stored exactly once.
func testReplicaResume(t *testing.T, o Opener) {
	s := open(t, o)
	entry := func(minutes int, msg string) policyv1.ComplianceHistory {
		return policyv1.ComplianceHistory{LastTimestamp: metav1.NewTime(t0.Add(time.Duration(minutes) * time.Minute)), Message: msg}
	}
	replica := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: "policies.policy-role", Labels: map[string]string{
		policyv1.RootPolicyLabel: "policies.policy-role", policyv1.ClusterNameLabel: "east",
	}}}
	replica.Status.Details = []*policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: "role-check"}, History: []policyv1.ComplianceHistory{
		entry(10, "NonCompliant; violation - roles [r] not found in namespace default"),
		entry(0, "Compliant; notification - roles [r] found as specified"),
	}}}
	if n := record(t, s, history.FromReplicas([]policyv1.Policy{replica})...); n != 2 {
		t.Fatalf("first pass added %d, want 2", n)
	}
	if n := record(t, s, history.FromReplicas([]policyv1.Policy{replica})...); n != 0 {
		t.Fatalf("second pass (restart) added %d, want 0", n)
	}
	d := replica.Status.Details[0]
	d.History = append([]policyv1.ComplianceHistory{entry(20, "Compliant; notification - roles [r] found as specified")}, d.History...)
	if n := record(t, s, history.FromReplicas([]policyv1.Policy{replica})...); n != 1 {
		t.Fatalf("newer history added %d, want 1", n)
	}
	got := events(t, s, history.Query{Cluster: "east"})
	states := []compliance.State{}
	for _, e := range got {
		if e.Policy != "policies/policy-role" || e.Template != "role-check" {
			t.Fatalf("event %+v: want policy policies/policy-role, template role-check", e)
		}
		states = append(states, e.State)
	}
	want := []compliance.State{compliance.Compliant, compliance.NonCompliant, compliance.Compliant}
	if len(states) != 3 || states[0] != want[0] || states[1] != want[1] || states[2] != want[2] {
		t.Fatalf("states = %v, want %v", states, want)
	}
}
