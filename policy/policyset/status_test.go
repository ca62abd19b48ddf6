package policyset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
)

func member(name string, state policyv1.ComplianceState, disabled bool) *policyv1.Policy {
	p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gov"}}
	p.Spec.Disabled = disabled
	p.Status.ComplianceState = state
	return p
}

func TestStatus(t *testing.T) {
	set := &policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "gov"},
		Spec: policyv1beta1.PolicySetSpec{Policies: []policyv1beta1.NonEmptyString{"a", "b", "c"}}}
	C, N, P := policyv1.Compliant, policyv1.NonCompliant, policyv1.Pending
	tests := []struct {
		name      string
		members   map[string]*policyv1.Policy
		compliant policyv1.ComplianceState
		message   string
	}{
		{"all compliant", map[string]*policyv1.Policy{"a": member("a", C, false), "b": member("b", C, false), "c": member("c", C, false)}, C, ""},
		{"one noncompliant wins", map[string]*policyv1.Policy{"a": member("a", C, false), "b": member("b", N, false), "c": member("c", P, false)}, N, ""},
		{"pending beats compliant", map[string]*policyv1.Policy{"a": member("a", C, false), "b": member("b", P, false), "c": member("c", C, false)}, P, ""},
		{"waiting: unknown", map[string]*policyv1.Policy{"a": member("a", C, false), "b": member("b", "", false), "c": member("c", C, false)}, "",
			"No status provided while awaiting policy status: b"},
		{"disabled and deleted are left out, and named", map[string]*policyv1.Policy{"a": member("a", C, false), "b": member("b", N, true)}, C,
			"Disabled policies: b; Deleted policies: c"},
		{"nothing counted: unknown", map[string]*policyv1.Policy{}, "", "Deleted policies: a, b, c"},
	}
	bindings := []policyv1.PlacementBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "z"}, PlacementRef: policyv1.PlacementSubject{Kind: "Placement", Name: "all"},
			Subjects: []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "PolicySet", Name: "s"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "y"}, PlacementRef: policyv1.PlacementSubject{Kind: "Placement", Name: "other"},
			Subjects: []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: "s"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := Status(set, tc.members, bindings)
			assert.Equal(t, tc.compliant, st.Compliant)
			assert.Equal(t, tc.message, st.StatusMessage)
			assert.Equal(t, []policyv1beta1.PolicySetStatusPlacement{{PlacementBinding: "z", Placement: "all"}}, st.Placement)
		})
	}
}
