package propagator

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
)

// builders ---------------------------------------------------------------------

func root(name string) *policyv1.Policy {
	return &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gov"}}
}

type bindingB struct{ b policyv1.PlacementBinding }

func binding(name, placement string) *bindingB {
	return &bindingB{policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gov"},
		PlacementRef: policyv1.PlacementSubject{APIGroup: PlacementGroup, Kind: "Placement", Name: placement}}}
}
func (x *bindingB) policy(n string) *bindingB {
	x.b.Subjects = append(x.b.Subjects, policyv1.Subject{APIGroup: policyv1.GroupName, Kind: "Policy", Name: n})
	return x
}
func (x *bindingB) set(n string) *bindingB {
	x.b.Subjects = append(x.b.Subjects, policyv1.Subject{APIGroup: policyv1.GroupName, Kind: "PolicySet", Name: n})
	return x
}
func (x *bindingB) enforce() *bindingB  { x.b.BindingOverrides.RemediationAction = "Enforce"; return x }
func (x *bindingB) restrict() *bindingB { x.b.SubFilter = policyv1.Restricted; return x }
func (x *bindingB) rule() *bindingB {
	x.b.PlacementRef.Kind, x.b.PlacementRef.APIGroup = "PlacementRule", "apps.open-cluster-management.io"
	return x
}
func (x *bindingB) obj() policyv1.PlacementBinding { return x.b }

func policySet(name string, policies ...string) policyv1beta1.PolicySet {
	s := policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gov"}}
	for _, p := range policies {
		s.Spec.Policies = append(s.Spec.Policies, policyv1beta1.NonEmptyString(p))
	}
	return s
}

func placed(clusters ...string) PlacementState { return PlacementState{Clusters: clusters} }

// tests ------------------------------------------------------------------------

func TestDecide(t *testing.T) {
	tests := []struct {
		name       string
		root       *policyv1.Policy
		bindings   []policyv1.PlacementBinding
		sets       []policyv1beta1.PolicySet
		placements map[string]PlacementState
		want       map[string]string
		placement  []policyv1.Placement
		unaccepted map[string]bool
		skipped    []string
		unsettled  bool
		problems   []string // substrings, in order
	}{
		{name: "not bound: nowhere", root: root("p"),
			bindings:   []policyv1.PlacementBinding{binding("b", "all").policy("other").obj()},
			placements: map[string]PlacementState{"all": placed("c1")},
			want:       map[string]string{}},
		{name: "bound: every decided cluster", root: root("p"),
			bindings:   []policyv1.PlacementBinding{binding("b", "all").policy("p").obj()},
			placements: map[string]PlacementState{"all": placed("c1", "c2")},
			want:       map[string]string{"c1": "", "c2": ""},
			placement:  []policyv1.Placement{{PlacementBinding: "b", Placement: "all"}}},
		{name: "bound twice (directly and through a set): one replica per cluster, both placements reported", root: root("p"),
			bindings:   []policyv1.PlacementBinding{binding("b1", "east").policy("p").obj(), binding("b2", "west").set("s").obj()},
			sets:       []policyv1beta1.PolicySet{policySet("s", "q", "p")},
			placements: map[string]PlacementState{"east": placed("c1", "c2"), "west": placed("c2", "c3")},
			want:       map[string]string{"c1": "", "c2": "", "c3": ""},
			placement:  []policyv1.Placement{{PlacementBinding: "b1", Placement: "east"}, {PlacementBinding: "b2", Placement: "west", PolicySet: "s"}}},
		{name: "a set that does not list the policy binds nothing", root: root("p"),
			bindings:   []policyv1.PlacementBinding{binding("b", "all").set("s").obj()},
			sets:       []policyv1beta1.PolicySet{policySet("s", "q")},
			placements: map[string]PlacementState{"all": placed("c1")},
			want:       map[string]string{}},
		{name: "disabled: nowhere, placements still reported", root: func() *policyv1.Policy { p := root("p"); p.Spec.Disabled = true; return p }(),
			bindings:   []policyv1.PlacementBinding{binding("b", "all").policy("p").obj()},
			placements: map[string]PlacementState{"all": placed("c1")},
			want:       map[string]string{},
			placement:  []policyv1.Placement{{PlacementBinding: "b", Placement: "all"}}},
		{name: "override on an unrestricted binding enforces its clusters only", root: root("p"),
			bindings:   []policyv1.PlacementBinding{binding("b1", "east").policy("p").obj(), binding("b2", "west").policy("p").enforce().obj()},
			placements: map[string]PlacementState{"east": placed("c1", "c2"), "west": placed("c2", "c3")},
			want:       map[string]string{"c1": "", "c2": "enforce", "c3": "enforce"},
			placement:  []policyv1.Placement{{PlacementBinding: "b1", Placement: "east"}, {PlacementBinding: "b2", Placement: "west"}}},
		{name: "restricted binding: overrides only clusters already bound, adds none", root: root("p"),
			bindings: []policyv1.PlacementBinding{binding("b1", "some").policy("p").obj(),
				binding("b2", "all").policy("p").enforce().restrict().obj()},
			placements: map[string]PlacementState{"some": placed("c1", "c2"), "all": placed("c2", "c3", "c4")},
			want:       map[string]string{"c1": "", "c2": "enforce"},
			placement:  []policyv1.Placement{{PlacementBinding: "b1", Placement: "some"}, {PlacementBinding: "b2", Placement: "all"}}},
		{name: "restricted binding alone places nothing", root: root("p"),
			bindings:   []policyv1.PlacementBinding{binding("b", "all").policy("p").enforce().restrict().obj()},
			placements: map[string]PlacementState{"all": placed("c1")},
			want:       map[string]string{},
			placement:  []policyv1.Placement{{PlacementBinding: "b", Placement: "all"}}},
		{name: "restricted binding without override changes nothing", root: root("p"),
			bindings:   []policyv1.PlacementBinding{binding("b1", "some").policy("p").obj(), binding("b2", "all").policy("p").restrict().obj()},
			placements: map[string]PlacementState{"some": placed("c1"), "all": placed("c1", "c2")},
			want:       map[string]string{"c1": ""},
			placement:  []policyv1.Placement{{PlacementBinding: "b1", Placement: "some"}, {PlacementBinding: "b2", Placement: "all"}}},
		{name: "missing Placement: a problem on that binding, the other binding still places", root: root("p"),
			bindings:   []policyv1.PlacementBinding{binding("b1", "gone").policy("p").obj(), binding("b2", "all").policy("p").obj()},
			placements: map[string]PlacementState{"all": placed("c1")},
			want:       map[string]string{"c1": ""},
			placement:  []policyv1.Placement{{PlacementBinding: "b1", Placement: "gone"}, {PlacementBinding: "b2", Placement: "all"}},
			problems:   []string{"Placement gov/gone not found"}},
		{name: "PlacementRule: a problem, reported as placementRule", root: root("p"),
			bindings:  []policyv1.PlacementBinding{binding("b", "r").rule().policy("p").obj()},
			want:      map[string]string{},
			placement: []policyv1.Placement{{PlacementBinding: "b", PlacementRule: "r"}},
			problems:  []string{"PlacementRule"}},
		{name: "unsettled decisions: listed clusters placed, flagged", root: root("p"),
			bindings:   []policyv1.PlacementBinding{binding("b", "all").policy("p").obj()},
			placements: map[string]PlacementState{"all": {Clusters: []string{"c1"}, Unsettled: true}},
			want:       map[string]string{"c1": ""}, unsettled: true,
			placement: []policyv1.Placement{{PlacementBinding: "b", Placement: "all"}}},
		{name: "namespace.name too long for the root-policy label: nowhere, a problem of the root",
			root:       root(strings.Repeat("x", 60)),
			bindings:   []policyv1.PlacementBinding{binding("b", "all").policy(strings.Repeat("x", 60)).obj()},
			placements: map[string]PlacementState{"all": placed("c1")},
			want:       map[string]string{},
			placement:  []policyv1.Placement{{PlacementBinding: "b", Placement: "all"}},
			problems:   []string{"more than the 63"}},
		{name: "a decided cluster the hub has not accepted gets no replica", root: root("p"),
			bindings:   []policyv1.PlacementBinding{binding("b", "all").policy("p").obj()},
			placements: map[string]PlacementState{"all": placed("c1", "joining")},
			unaccepted: map[string]bool{"joining": true},
			want:       map[string]string{"c1": ""}, skipped: []string{"joining"},
			placement: []policyv1.Placement{{PlacementBinding: "b", Placement: "all"}}},
		{name: "not accepted, enforced through a restricted binding: still none", root: root("p"),
			bindings: []policyv1.PlacementBinding{binding("b", "all").policy("p").obj(),
				binding("r", "all").policy("p").restrict().enforce().obj(), binding("e", "east").policy("p").enforce().obj()},
			placements: map[string]PlacementState{"all": placed("c1", "denied"), "east": placed("denied")},
			unaccepted: map[string]bool{"denied": true},
			want:       map[string]string{"c1": "enforce"}, skipped: []string{"denied"},
			placement: []policyv1.Placement{{PlacementBinding: "b", Placement: "all"}, {PlacementBinding: "e", Placement: "east"}, {PlacementBinding: "r", Placement: "all"}}},
		{name: "not accepted while the decisions are in flux: none, and flagged", root: root("p"),
			bindings:   []policyv1.PlacementBinding{binding("b", "all").policy("p").obj()},
			placements: map[string]PlacementState{"all": {Clusters: []string{"joining"}, Unsettled: true}},
			unaccepted: map[string]bool{"joining": true},
			want:       map[string]string{}, skipped: []string{"joining"}, unsettled: true,
			placement: []policyv1.Placement{{PlacementBinding: "b", Placement: "all"}}},
		{name: "a disabled root skips nothing: it goes nowhere", root: func() *policyv1.Policy { p := root("p"); p.Spec.Disabled = true; return p }(),
			bindings:   []policyv1.PlacementBinding{binding("b", "all").policy("p").obj()},
			placements: map[string]PlacementState{"all": placed("joining")},
			unaccepted: map[string]bool{"joining": true},
			want:       map[string]string{},
			placement:  []policyv1.Placement{{PlacementBinding: "b", Placement: "all"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.root, Inputs{Bindings: tc.bindings, PolicySets: tc.sets, Placements: tc.placements, Unaccepted: tc.unaccepted})
			assert.Equal(t, tc.want, d.Clusters)
			assert.Equal(t, tc.skipped, d.Skipped)
			var got []policyv1.Placement
			for _, p := range d.Placements {
				got = append(got, *p)
			}
			assert.Equal(t, tc.placement, got)
			assert.Equal(t, tc.unsettled, d.Unsettled)
			assert.Len(t, d.Problems, len(tc.problems))
			for i, want := range tc.problems {
				if i < len(d.Problems) {
					assert.Contains(t, d.Problems[i].Message, want)
				}
			}
		})
	}
}

func TestAggregate(t *testing.T) {
	C, N, P := policyv1.Compliant, policyv1.NonCompliant, policyv1.Pending
	tests := []struct {
		in   []policyv1.ComplianceState
		want policyv1.ComplianceState
	}{
		{nil, ""},
		{[]policyv1.ComplianceState{C, C}, C},
		{[]policyv1.ComplianceState{C, ""}, ""},
		{[]policyv1.ComplianceState{C, "", P}, P},
		{[]policyv1.ComplianceState{P, N, C, ""}, N},
		{[]policyv1.ComplianceState{"UnknownCompliancy", C}, ""},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, Aggregate(tc.in), "%v", tc.in)
	}
}

func TestReplica(t *testing.T) {
	r := root("p")
	r.Labels = map[string]string{"team": "a", policyv1.GroupName + "/x": "1"}
	r.Annotations = map[string]string{policyv1.StandardsAnnotation: "NIST SP 800-53", "argocd.argoproj.io/tracking-id": "t",
		"kubectl.kubernetes.io/last-applied-configuration": "{}"}
	r.Spec.RemediationAction = "inform"

	got := Replica(r, "c1", "enforce")
	assert.Equal(t, "gov.p", got.Name)
	assert.Equal(t, "c1", got.Namespace)
	assert.Equal(t, map[string]string{"team": "a", policyv1.GroupName + "/x": "1", policyv1.RootPolicyLabel: "gov.p",
		policyv1.ClusterNameLabel: "c1", policyv1.ClusterNamespaceLabel: "c1"}, got.Labels)
	assert.Equal(t, map[string]string{policyv1.StandardsAnnotation: "NIST SP 800-53", "argocd.argoproj.io/tracking-id": "t"}, got.Annotations)
	assert.Equal(t, policyv1.RemediationAction("enforce"), got.Spec.RemediationAction)
	assert.Equal(t, policyv1.RemediationAction("inform"), r.Spec.RemediationAction, "the root is not changed")

	no := false
	r.Spec.CopyPolicyMetadata = &no
	got = Replica(r, "c1", "")
	assert.Equal(t, map[string]string{policyv1.GroupName + "/x": "1", policyv1.RootPolicyLabel: "gov.p",
		policyv1.ClusterNameLabel: "c1", policyv1.ClusterNamespaceLabel: "c1"}, got.Labels)
	assert.Equal(t, map[string]string{policyv1.StandardsAnnotation: "NIST SP 800-53"}, got.Annotations)
	assert.Equal(t, policyv1.RemediationAction("inform"), got.Spec.RemediationAction)

	assert.True(t, ReplicaUpToDate(got, Replica(r, "c1", "")))
	tampered := got.DeepCopy()
	tampered.Spec.Disabled = true
	assert.False(t, ReplicaUpToDate(tampered, got))
	tampered = got.DeepCopy()
	tampered.Labels["extra"] = "x"
	assert.False(t, ReplicaUpToDate(tampered, got))
}

func TestSplitRootKey(t *testing.T) {
	ns, name, ok := splitRootKey("gov.my.policy")
	assert.True(t, ok)
	assert.Equal(t, "gov", ns)
	assert.Equal(t, "my.policy", name)
	for _, bad := range []string{"nodot", ".x", "x."} {
		_, _, ok := splitRootKey(bad)
		assert.False(t, ok, bad)
	}
}

func TestDecidedClusters(t *testing.T) {
	in := Inputs{Placements: map[string]PlacementState{"a": placed("c2", "c1"), "b": placed("c1", "c3"), "gone": {Missing: true}}}
	assert.Equal(t, []string{"c1", "c2", "c3"}, DecidedClusters(in))
	assert.Empty(t, DecidedClusters(Inputs{}))
}
