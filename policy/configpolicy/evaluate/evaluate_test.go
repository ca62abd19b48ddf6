package evaluate

import (
	"encoding/json"
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
func policy(t testing.TB, y string) *policyv1.ConfigurationPolicy {
	t.Helper()
	p := &policyv1.ConfigurationPolicy{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(y), p))
	return p
}

func objects(t testing.TB, ys ...string) *Objects {
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
// nothing in a condition message) and keeps its status within
// RelatedBudget, saying what it left out.
func TestLargeResultsFitTheBudget(t *testing.T) {
	const n = 4000
	var objs, bad []string
	for i := 0; i < n; i++ {
		data := "ok"
		if i%2 == 0 {
			data = "bad"
			bad = append(bad, fmt.Sprintf("cm-%04d", i))
		}
		objs = append(objs, fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-%04d, namespace: ns, uid: u-%04d}, data: {v: %s}}", i, i, data))
	}
	cluster := objects(t, objs...)
	p := policy(t, `
metadata: {name: p}
spec:
  namespaceSelector: {include: [ns]}
  object-templates:
  - complianceType: mustnothave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, data: {v: bad}}
`)
	r := Policy(p, cluster)
	require.Equal(t, "configmaps ["+strings.Join(bad, ", ")+"] found in namespace ns", r.Templates[0].Message())
	st := r.Status(nil, time.Now())
	require.Equal(t, n/2, len(st.RelatedObjects), "only the matching objects are related, and they fit")
	require.False(t, r.Dropped().Any())

	// Every object related, the mismatched ones with a diff: the diffs go
	// first, then Compliant objects; NonCompliant ones are kept, in
	// upstream's order.
	p = policy(t, `
metadata: {name: p}
spec:
  namespaceSelector: {include: [ns]}
  object-templates:
  - complianceType: musthave
    recordDiff: InStatus
    objectSelector: {}
    objectDefinition: {apiVersion: v1, kind: ConfigMap, data: {v: ok}}
`)
	r = Policy(p, cluster)
	st = r.Status(nil, time.Now())
	raw, err := json.Marshal(st.RelatedObjects)
	require.NoError(t, err)
	require.LessOrEqual(t, len(raw), RelatedBudget)
	d := r.Dropped()
	require.Equal(t, n, d.Total)
	require.Equal(t, n/2, d.Diffs, "every diff had to go")
	require.Zero(t, d.NonCompliant)
	require.Equal(t, n-len(st.RelatedObjects), d.Compliant)
	nc := 0
	for i, ro := range st.RelatedObjects {
		if ro.Compliant == string(policyv1.NonCompliant) {
			nc++
			require.Empty(t, ro.Properties.Diff)
			require.NotEmpty(t, ro.Properties.UID)
		}
		if i > 0 {
			require.Less(t, st.RelatedObjects[i-1].Object.Metadata.Name, ro.Object.Metadata.Name, "upstream's order")
		}
	}
	require.Equal(t, n/2, nc)
	require.Contains(t, d.String(), fmt.Sprintf("the status lists %d of %d related objects (left out: 0 NonCompliant, %d Compliant), %d without their diff", len(st.RelatedObjects), n, d.Compliant, n/2))

	// The status says it: the template gets a second condition, after
	// upstream's one; the policy's messages stay upstream's.
	conds := st.CompliancyDetails[0].Conditions
	require.Len(t, conds, 2)
	require.Equal(t, Violation, conds[0].Type)
	require.Equal(t, ConditionRelatedObjectsTruncated, conds[1].Type)
	require.Equal(t, d.String(), conds[1].Message)
	require.NotContains(t, r.ComplianceMessage(st, false), "related objects")

	// An object that would still weigh too much sheds more, and says so;
	// the kept ones stay NonCompliant first.
	before := len(st.RelatedObjects)
	r.Shrink(&st, nil, 100_000, time.Now())
	raw2, err := json.Marshal(st.RelatedObjects)
	require.NoError(t, err)
	require.LessOrEqual(t, len(raw2), len(raw)-100_000)
	d2 := r.Dropped()
	require.Equal(t, n, d2.Total)
	require.Equal(t, n/2, d2.Diffs)
	require.Equal(t, n-len(st.RelatedObjects), d2.Compliant+d2.NonCompliant)
	require.Less(t, len(st.RelatedObjects), before)
	require.Equal(t, d2.String(), st.CompliancyDetails[0].Conditions[1].Message)
	require.Len(t, st.CompliancyDetails[0].Conditions, 2)
}

// A template whose objects all fit gets no note, though another's were cut.
func TestTruncatedNoteOnlyOnTheTemplatesCut(t *testing.T) {
	var objs []string
	for i := 0; i < 4000; i++ {
		objs = append(objs, fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-%04d, namespace: ns, uid: u-%04d}, data: {v: ok}}", i, i))
	}
	objs = append(objs, "{apiVersion: v1, kind: Namespace, metadata: {name: ns}}")
	p := policy(t, `
metadata: {name: p}
spec:
  namespaceSelector: {include: [ns]}
  object-templates:
  - complianceType: musthave
    recordDiff: None
    objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: ns, labels: {a: b}}}
  - complianceType: musthave
    objectSelector: {}
    objectDefinition: {apiVersion: v1, kind: ConfigMap, data: {v: ok}}
`)
	r := Policy(p, objects(t, objs...))
	st := r.Status(nil, time.Now())
	require.True(t, r.Dropped().Any())
	require.Len(t, st.CompliancyDetails[0].Conditions, 1, "the NonCompliant Namespace is kept")
	require.Len(t, st.CompliancyDetails[1].Conditions, 2)
	require.Equal(t, st.RelatedObjects[len(st.RelatedObjects)-1].Object.Kind, "Namespace")

	// The next evaluation with all fitting drops the note.
	st = Policy(p, objects(t, objs[3990:]...)).Status(&st, time.Now())
	require.Len(t, st.CompliancyDetails[1].Conditions, 1)
}

func TestFitRelated(t *testing.T) {
	yes := true
	ro := func(name, compliant, diff string, created bool) policyv1.RelatedObject {
		r := policyv1.RelatedObject{Object: policyv1.ObjectResource{Kind: "ConfigMap", APIVersion: "v1",
			Metadata: policyv1.ObjectMetadata{Name: name, Namespace: "ns"}}, Compliant: compliant, Reason: "r"}
		if diff != "" || created {
			r.Properties = &policyv1.ObjectProperties{Diff: diff}
			if created {
				r.Properties.CreatedByPolicy = &yes
			}
		}
		return r
	}
	names := func(l []policyv1.RelatedObject) []string {
		var out []string
		for _, r := range l {
			out = append(out, r.Object.Metadata.Name)
		}
		return out
	}
	size := func(l ...policyv1.RelatedObject) int {
		b, _ := json.Marshal(l)
		return len(b)
	}
	a, b := ro("a", "Compliant", "", false), ro("b", "NonCompliant", strings.Repeat("x", 500), false)
	c, d := ro("c", "Compliant", "", true), ro("d", "Compliant", "", false)
	all := []policyv1.RelatedObject{a, b, c, d}

	got, dropped, _ := fitRelated(all, 1<<20)
	require.Equal(t, all, got)
	require.False(t, dropped.Any())

	// The diff goes first.
	bNoDiff := ro("b", "NonCompliant", "", false)
	got, dropped, _ = fitRelated(all, size(a, bNoDiff, c, d))
	require.Equal(t, []string{"a", "b", "c", "d"}, names(got))
	require.Nil(t, got[1].Properties, "nothing else was in the properties")
	require.Equal(t, Dropped{Diffs: 1, Total: 4}, dropped)
	require.NotEmpty(t, all[1].Properties.Diff, "the input is not changed")

	// Then Compliant objects, the last first; the created one stays longest.
	got, dropped, _ = fitRelated(all, size(a, bNoDiff, c))
	require.Equal(t, []string{"a", "b", "c"}, names(got))
	require.Equal(t, Dropped{Diffs: 1, Compliant: 1, Total: 4}, dropped)
	got, dropped, _ = fitRelated(all, size(bNoDiff, c))
	require.Equal(t, []string{"b", "c"}, names(got))
	require.Equal(t, Dropped{Diffs: 1, Compliant: 2, Total: 4}, dropped)
	got, _, _ = fitRelated(all, size(c))
	require.Equal(t, []string{"c"}, names(got))
}

// BenchmarkStatusFitsRelated: the cost of keeping a status within
// RelatedBudget, 5,000 related ConfigMaps (all fit without diffs; with
// InStatus diffs of every mismatch, they do not).
//
//	go test -run '^$' -bench StatusFitsRelated ./policy/configpolicy/evaluate/
func BenchmarkStatusFitsRelated(b *testing.B) {
	var objs []string
	for i := 0; i < 5000; i++ {
		objs = append(objs, fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-%04d, namespace: ns, uid: u-%04d}, data: {v: v%d}}", i, i, i%2))
	}
	cluster := objects(b, objs...)
	for _, diff := range []string{"None", "InStatus"} {
		p := policy(b, `
metadata: {name: p}
spec:
  namespaceSelector: {include: [ns]}
  object-templates:
  - complianceType: musthave
    recordDiff: `+diff+`
    objectSelector: {}
    objectDefinition: {apiVersion: v1, kind: ConfigMap, data: {v: v0}}
`)
		r := Policy(p, cluster)
		b.Run("recordDiff="+diff, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r.Status(nil, time.Now())
			}
			b.ReportMetric(float64(len(r.Status(nil, time.Now()).RelatedObjects)), "kept")
		})
	}
}
