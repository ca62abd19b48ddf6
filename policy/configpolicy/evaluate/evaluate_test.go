package evaluate

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

func TestSelectNamespaces(t *testing.T) {
	all := []Namespace{
		{Name: "default"}, {Name: "kube-system", Labels: map[string]string{"system": "true"}},
		{Name: "prod-a", Labels: map[string]string{"env": "prod"}}, {Name: "prod-b", Labels: map[string]string{"env": "prod"}},
		{Name: "dev", Labels: map[string]string{"env": "dev"}}, {Name: "gone", Terminating: true},
	}
	for _, tc := range []struct {
		name string
		sel  policyv1.Target
		want []string
		err  string
	}{
		{name: "empty selects nothing", sel: policyv1.Target{}},
		{name: "terminating kept by default", sel: policyv1.Target{Include: []policyv1.NonEmptyString{"gone"}}, want: []string{"gone"}},
		{name: "terminating kept IfMatch", sel: policyv1.Target{Include: []policyv1.NonEmptyString{"gone"}, TerminatingInclusion: "IfMatch"}, want: []string{"gone"}},
		{name: "terminating dropped with Never", sel: policyv1.Target{Include: []policyv1.NonEmptyString{"gone", "dev"}, TerminatingInclusion: "Never"}, want: []string{"dev"}},
		{name: "exclude alone selects nothing (upstream)", sel: policyv1.Target{Exclude: []policyv1.NonEmptyString{"kube-*"}}},
		{name: "empty matchLabels selects every namespace", sel: policyv1.Target{MatchLabels: map[string]string{}, Exclude: []policyv1.NonEmptyString{"kube-*", "prod-*"}},
			want: []string{"default", "dev", "gone"}},
		{name: "include glob", sel: policyv1.Target{Include: []policyv1.NonEmptyString{"prod-*"}}, want: []string{"prod-a", "prod-b"}},
		{name: "exclude wins", sel: policyv1.Target{Include: []policyv1.NonEmptyString{"*"}, Exclude: []policyv1.NonEmptyString{"kube-*", "prod-b"}},
			want: []string{"default", "dev", "gone", "prod-a"}},
		{name: "labels alone select from all", sel: policyv1.Target{MatchLabels: map[string]string{"env": "prod"}}, want: []string{"prod-a", "prod-b"}},
		{name: "labels and include intersect", sel: policyv1.Target{Include: []policyv1.NonEmptyString{"prod-a", "dev"}, MatchLabels: map[string]string{"env": "prod"}},
			want: []string{"prod-a"}},
		{name: "match expressions", sel: policyv1.Target{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"dev", "prod"}}},
			Exclude: []policyv1.NonEmptyString{"prod-a"}}, want: []string{"dev", "prod-b"}},
		{name: "exact name not present", sel: policyv1.Target{Include: []policyv1.NonEmptyString{"missing"}}},
		{name: "bad glob", sel: policyv1.Target{Include: []policyv1.NonEmptyString{"a["}}, err: `Error filtering namespaces with provided namespaceSelector: error parsing 'include' pattern 'a[': syntax error in pattern`},
		{name: "bad operator", sel: policyv1.Target{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}, err: "namespaceSelector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SelectNamespaces(tc.sel, all)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// policy builds a ConfigurationPolicy from YAML.
func policy(t *testing.T, y string) *policyv1.ConfigurationPolicy {
	t.Helper()
	p := &policyv1.ConfigurationPolicy{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(y), p))
	return p
}

func objects(t *testing.T, ys ...string) *Objects {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, y := range ys {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(y), &u.Object))
		objs = append(objs, u)
	}
	o, err := NewObjects(objs...)
	require.NoError(t, err)
	return o
}

const nsPolicy = `
metadata: {name: p, namespace: default, generation: 3}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: prod}}
`

// Applied actions change the wording and compliance; createdByPolicy survives
// into later evaluations of the same object (same UID).
func TestStatusAfterEnforce(t *testing.T) {
	p := policy(t, nsPolicy)
	r := Policy(p, objects(t))
	require.Equal(t, policyv1.NonCompliant, r.Compliance())
	require.Equal(t, "NonCompliant; violation - namespaces [prod] not found", r.DefaultMessage())
	acts := r.Actions()
	require.Len(t, acts, 1)
	require.Equal(t, Create, acts[0].Action)
	require.Equal(t, "prod", acts[0].Desired.GetName())

	acts[0].Applied, acts[0].CreatedByPolicy, acts[0].UID = Create, true, "uid-1"
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := r.Status(nil, now)
	require.Equal(t, policyv1.Compliant, st.ComplianceState)
	require.Equal(t, "namespaces [prod] was created successfully", st.CompliancyDetails[0].Conditions[0].Message)
	require.Equal(t, "notification", st.CompliancyDetails[0].Conditions[0].Type)
	require.Equal(t, int64(3), st.LastEvaluatedGeneration)
	require.Equal(t, "2026-01-02T03:04:05Z", st.LastEvaluated)
	require.Len(t, st.RelatedObjects, 1)
	ro := st.RelatedObjects[0]
	require.Equal(t, "K8s creation success", ro.Reason)
	require.True(t, *ro.Properties.CreatedByPolicy)
	require.Equal(t, "uid-1", ro.Properties.UID)

	// Next evaluation: the namespace exists with that UID.
	later := Policy(p, objects(t, "{apiVersion: v1, kind: Namespace, metadata: {name: prod, uid: uid-1}}"))
	st2 := later.Status(&st, now.Add(time.Minute))
	require.Equal(t, "namespaces [prod] found as specified", st2.CompliancyDetails[0].Conditions[0].Message)
	require.True(t, *st2.RelatedObjects[0].Properties.CreatedByPolicy)
	// Recreated by someone else: different UID, not ours.
	other := Policy(p, objects(t, "{apiVersion: v1, kind: Namespace, metadata: {name: prod, uid: uid-2}}"))
	require.Nil(t, other.Status(&st, now).RelatedObjects[0].Properties.CreatedByPolicy)
}

func TestApplyErrorIsNonCompliant(t *testing.T) {
	r := Policy(policy(t, nsPolicy), objects(t))
	a := r.Actions()[0]
	a.ApplyError = errors.New(`namespaces is forbidden: User "x" cannot create resource "namespaces"`)
	require.Equal(t, policyv1.NonCompliant, r.Compliance())
	require.Equal(t, "namespaces [prod] is missing, and cannot be created, reason: `namespaces is forbidden: User \"x\" cannot create resource \"namespaces\"`",
		r.Templates[0].Message())
	require.Equal(t, "K8s creation error", r.Status(nil, time.Now()).RelatedObjects[0].Reason)
	require.True(t, r.Retryable())
}

// A template that cannot be evaluated does not affect the other templates.
func TestBrokenTemplateIsolated(t *testing.T) {
	p := policy(t, `
metadata: {name: p, namespace: default}
spec:
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: example.com/v1, kind: Widget, metadata: {name: w}}
  - complianceType: musthave
    objectDefinition: {kind: ConfigMap, metadata: {name: c}}
  - complianceType: sometimes
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: default}}
`)
	r := Policy(p, objects(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: default}}"))
	var msgs []string
	for _, tr := range r.Templates {
		msgs = append(msgs, tr.Message())
	}
	require.Equal(t, []string{
		"couldn't find mapping resource with kind Widget in API version example.com/v1, please check if you have CRD deployed",
		"The kind and apiVersion fields are required on the object template at index 1 in policy p",
		`object-templates[2]: complianceType "sometimes" is not one of MustHave, MustOnlyHave, MustNotHave`,
		"namespaced object c of kind ConfigMap has no namespace specified from the policy namespaceSelector nor the object metadata",
		"configmaps [c] found as specified in namespace default",
	}, msgs)
	require.Equal(t, policyv1.Compliant, r.Templates[4].Compliance())
	require.Equal(t, policyv1.NonCompliant, r.Compliance())
	// The unknown kind may be installed later; the other errors need a policy change.
	require.True(t, r.Retryable())
	r.Templates[0].Error = nil
	require.False(t, r.Retryable())
}

func TestObjectsRejectsBadInput(t *testing.T) {
	u := func(y string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(y), &o.Object))
		return o
	}
	_, err := NewObjects(u("{apiVersion: v1, kind: Namespace, metadata: {name: a, namespace: b}}"))
	require.ErrorContains(t, err, `Namespace "a" has namespace "b" but Namespace is cluster-scoped`)
	_, err = NewObjects(u("{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: b}}"), u("{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: b}}"))
	require.ErrorContains(t, err, "ConfigMap b/a is given twice")
	_, err = NewObjects(u("{apiVersion: v1, kind: ConfigMap}"))
	require.ErrorContains(t, err, "needs apiVersion, kind and metadata.name")
}

// Upstream keeps a diff's 3 header lines and 50 more, counting the empty
// line after the last newline in the total.
func TestTruncateDiff(t *testing.T) {
	lines := []string{"--- a : existing", "+++ a : updated", "@@ -1,1 +1,60 @@"}
	for i := 0; i < 60; i++ {
		lines = append(lines, fmt.Sprintf("+  k%d: v", i))
	}
	d := strings.Join(lines, "\n")
	got := TruncateDiff(d)
	require.Equal(t, "# Truncated: showing 50/64 diff lines:\n"+strings.Join(lines[:53], "\n"), got)
	short := strings.Join(lines[:52], "\n")
	require.Equal(t, short, TruncateDiff(short), "52 lines are kept whole")
	// 53 lines count as 54: upstream says it truncates and keeps them all.
	require.Equal(t, "# Truncated: showing 50/54 diff lines:\n"+strings.Join(lines[:53], "\n"), TruncateDiff(strings.Join(lines[:53], "\n")))
	require.Empty(t, TruncateDiff(""))
}

func TestObjectSelector(t *testing.T) {
	cluster := objects(t,
		"{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: ns, labels: {app: web}}, data: {k: v}}",
		"{apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: ns, labels: {app: api}}, data: {k: other}}")
	p := policy(t, `
metadata: {name: p}
spec:
  namespaceSelector: {include: [ns]}
  object-templates:
  - complianceType: musthave
    objectSelector: {matchLabels: {app: api}}
    objectDefinition: {apiVersion: v1, kind: ConfigMap, data: {k: v}}
  - complianceType: musthave
    objectSelector: {matchLabels: {app: nope}}
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
  - complianceType: musthave
    objectSelector: {matchExpressions: [{key: app, operator: Sideways}]}
    objectDefinition: {apiVersion: v1, kind: ConfigMap}
`)
	r := Policy(p, cluster)
	// Only b is selected, and it does not hold k: v.
	require.Equal(t, "configmaps [b] found but not as specified in namespace ns", r.Templates[0].Message())
	// A named template ignores the selector.
	require.Equal(t, "configmaps [a] found as specified in namespace ns", r.Templates[1].Message())
	require.Equal(t, "Error parsing provided objectSelector in the object-template at index [2]: \"Sideways\" is not a valid label selector operator", r.Templates[2].Message())
	var te *TemplateError
	require.ErrorAs(t, r.Templates[2].Error, &te)
}

// A template matching thousands of objects lists every name (upstream cuts
// nothing in a condition message) and keeps its status small.
func TestLargeResultsAreCapped(t *testing.T) {
	var objs, bad []string
	for i := 0; i < MaxRelated+50; i++ {
		data := "ok"
		if i%2 == 0 {
			data = "bad"
			bad = append(bad, fmt.Sprintf("cm-%04d", i))
		}
		objs = append(objs, fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-%04d, namespace: ns}, data: {v: %s}}", i, data))
	}
	p := policy(t, `
metadata: {name: p}
spec:
  namespaceSelector: {include: [ns]}
  object-templates:
  - complianceType: mustnothave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, data: {v: bad}}
`)
	r := Policy(p, objects(t, objs...))
	msg := r.Templates[0].Message()
	require.Equal(t, "configmaps ["+strings.Join(bad, ", ")+"] found in namespace ns", msg)
	st := r.Status(nil, time.Now())
	require.Len(t, st.RelatedObjects, (MaxRelated+50)/2, "only the matching objects are related")

	// More related objects than the cap: NonCompliant ones are kept first.
	p = policy(t, `
metadata: {name: p}
spec:
  namespaceSelector: {include: [ns]}
  object-templates:
  - complianceType: musthave
    objectSelector: {}
    objectDefinition: {apiVersion: v1, kind: ConfigMap, data: {v: ok}}
`)
	st = Policy(p, objects(t, objs...)).Status(nil, time.Now())
	require.Len(t, st.RelatedObjects, MaxRelated)
	nc := 0
	for i, ro := range st.RelatedObjects {
		if ro.Compliant == string(policyv1.NonCompliant) {
			require.Equal(t, i, nc, "NonCompliant related objects come first")
			nc++
		}
	}
	require.Equal(t, (MaxRelated+50)/2, nc)
}
