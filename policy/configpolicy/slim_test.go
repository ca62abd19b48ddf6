package configpolicy

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/configpolicy/evaluate"
)

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(y), &u.Object))
	return u
}

const managedConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: x
  resourceVersion: "7"
  labels: {team: a}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{"data":{"level":"info"}}'}
  managedFields:
  - manager: kubectl
    operation: Update
    apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1: {"f:data": {".": {}, "f:level": {}}}
data: {level: info}
`

// The cache transform drops managedFields and nothing else, from objects
// and from the last state of deleted ones; other types pass untouched.
func TestSlimDropsOnlyManagedFields(t *testing.T) {
	cases := []struct {
		name string
		in   func(u *unstructured.Unstructured) any
		out  func(got any) *unstructured.Unstructured
	}{
		{"object", func(u *unstructured.Unstructured) any { return u },
			func(got any) *unstructured.Unstructured { return got.(*unstructured.Unstructured) }},
		{"deleted, final state unknown", func(u *unstructured.Unstructured) any {
			return cache.DeletedFinalStateUnknown{Key: "x/settings", Obj: u}
		}, func(got any) *unstructured.Unstructured {
			return got.(cache.DeletedFinalStateUnknown).Obj.(*unstructured.Unstructured)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := object(t, managedConfigMap)
			unstructured.RemoveNestedField(want.Object, "metadata", "managedFields")
			got, err := slim(c.in(object(t, managedConfigMap)))
			require.NoError(t, err)
			require.Equal(t, want.Object, c.out(got).Object)
		})
	}
	for _, other := range []any{"x/settings", nil, &unstructured.Unstructured{Object: map[string]any{"kind": "NoMetadata"}}} {
		got, err := slim(other)
		require.NoError(t, err)
		require.Equal(t, other, got)
	}
}

// A slim object evaluates as the whole one: Matches stays Matches, and a
// mismatch yields the same update, diff and desired object (which carries no
// managedFields, so the apiserver keeps its own).
func TestSlimObjectEvaluatesAsTheWholeOne(t *testing.T) {
	policy := func(level string) *policyv1.ConfigurationPolicy {
		p := &policyv1.ConfigurationPolicy{}
		require.NoError(t, yaml.UnmarshalStrict([]byte(`
metadata: {name: p, namespace: pol}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: x}, data: {level: `+level+`}}
`), p))
		return p
	}
	findings := func(level string, live *unstructured.Unstructured) *evaluate.Finding {
		cl, err := evaluate.NewObjects(live)
		require.NoError(t, err)
		res := evaluate.Policy(policy(level), cl)
		require.Len(t, res.Templates, 1)
		require.Len(t, res.Templates[0].Findings, 1)
		return res.Templates[0].Findings[0]
	}
	whole := object(t, managedConfigMap)
	slimmed, err := slim(object(t, managedConfigMap))
	require.NoError(t, err)
	thin := slimmed.(*unstructured.Unstructured)

	require.Equal(t, evaluate.Matches, findings("info", whole).Outcome)
	require.Equal(t, evaluate.Matches, findings("info", thin).Outcome)

	fw, ft := findings("debug", whole), findings("debug", thin)
	require.Equal(t, evaluate.Mismatch, ft.Outcome)
	require.Equal(t, evaluate.Update, ft.Action)
	require.Equal(t, fw.Mismatches, ft.Mismatches)
	require.Equal(t, fw.Diff, ft.Diff)
	wantDesired := fw.Desired.DeepCopy()
	unstructured.RemoveNestedField(wantDesired.Object, "metadata", "managedFields")
	require.Equal(t, wantDesired.Object, ft.Desired.Object)
	require.Equal(t, map[string]string{"team": "a"}, ft.Desired.GetLabels())
	require.Contains(t, ft.Desired.GetAnnotations(), "kubectl.kubernetes.io/last-applied-configuration")
	_, has, _ := unstructured.NestedFieldNoCopy(ft.Desired.Object, "metadata", "managedFields")
	require.False(t, has)
}

const managedPolicy = `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata:
  name: p
  namespace: pol
  resourceVersion: "9"
  finalizers: [example.com/keep]
  managedFields:
  - {manager: kubectl, operation: Update, apiVersion: policy.open-cluster-management.io/v1, fieldsType: FieldsV1, fieldsV1: {"f:spec": {}}}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: x}, data: {level: info}}
status:
  compliant: Compliant
  history: [{message: "Compliant; notification - found", eventName: p.1}]
`

// The policy cache keeps policies decoded, without managedFields; one that
// does not decode stays whole (bar managedFields) for its evaluation to
// report; the last state of a deleted policy is treated alike.
func TestSlimPolicy(t *testing.T) {
	got, err := slimPolicy(object(t, managedPolicy))
	require.NoError(t, err)
	p, ok := got.(*policyv1.ConfigurationPolicy)
	require.True(t, ok, "decoded: %T", got)
	require.Nil(t, p.ManagedFields)
	require.Equal(t, "9", p.ResourceVersion)
	require.Equal(t, []string{"example.com/keep"}, p.Finalizers)
	require.Equal(t, "ConfigurationPolicy", p.Kind)
	require.Equal(t, policyv1.Compliant, p.Status.ComplianceState)
	require.Equal(t, "p.1", p.Status.History[0].EventName)
	require.Len(t, p.Spec.ObjectTemplates, 1)

	// The same policy decoded by the engine's own converter, bar managedFields.
	want := &policyv1.ConfigurationPolicy{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(object(t, managedPolicy).Object, want))
	want.ManagedFields = nil
	require.Equal(t, want, p)

	bad := object(t, managedPolicy)
	require.NoError(t, unstructured.SetNestedField(bad.Object, "not a list", "spec", "object-templates"))
	got, err = slimPolicy(bad)
	require.NoError(t, err)
	u, ok := got.(*unstructured.Unstructured)
	require.True(t, ok, "kept whole: %T", got)
	require.Equal(t, "not a list", u.Object["spec"].(map[string]any)["object-templates"])
	_, has, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "managedFields")
	require.False(t, has)

	got, err = slimPolicy(cache.DeletedFinalStateUnknown{Key: "pol/p", Obj: object(t, managedPolicy)})
	require.NoError(t, err)
	require.IsType(t, &policyv1.ConfigurationPolicy{}, got.(cache.DeletedFinalStateUnknown).Obj)
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(got)
	require.NoError(t, err)
	require.Equal(t, "pol/p", key)
}
