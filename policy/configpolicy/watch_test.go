package configpolicy

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/configpolicy/evaluate"
)

// A change to an object re-queues only the policies whose templates can
// match it: same resource, and the same name or no name.
func TestInterestedPolicies(t *testing.T) {
	w := newWatches(t.Context(), nil, 0)
	r := &Runner{watches: w, unknown: map[string]bool{}}
	cluster, err := evaluate.NewObjects()
	require.NoError(t, err)
	listen := func(key, spec string) {
		p := &policyv1.ConfigurationPolicy{}
		require.NoError(t, yaml.UnmarshalStrict([]byte(spec), p))
		r.listen(key, p, evaluate.Policy(p, cluster))
	}
	listen("p/named-cm", `spec: {object-templates: [{complianceType: musthave, objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: x}}}]}`)
	listen("p/any-cm", `spec: {namespaceSelector: {include: ["*"]}, object-templates: [{complianceType: musthave, objectDefinition: {apiVersion: v1, kind: ConfigMap}}]}`)
	listen("p/ns", `spec: {object-templates: [{complianceType: musthave, objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: prod}}}]}`)
	listen("p/unknown", `spec: {object-templates: [{complianceType: musthave, objectDefinition: {apiVersion: example.com/v1, kind: Widget, metadata: {name: w}}}]}`)

	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	obj := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetName(name)
		return u
	}
	require.Equal(t, []string{"p/any-cm", "p/named-cm"}, w.interested(cm, obj("a")))
	require.Equal(t, []string{"p/any-cm"}, w.interested(cm, obj("b")))
	// Namespace events reach the named Namespace template and the selector policy.
	require.Equal(t, []string{"p/any-cm", "p/ns"}, w.interested(namespacesGVR, obj("prod")))
	require.Equal(t, []string{"p/any-cm"}, w.interested(namespacesGVR, obj("dev")))
	require.Empty(t, w.interested(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, obj("a")))
	require.True(t, r.unknown["p/unknown"])

	// A policy that stops naming a kind stops listening to it.
	listen("p/named-cm", `spec: {object-templates: [{complianceType: musthave, objectDefinition: {apiVersion: v1, kind: Secret, metadata: {name: a, namespace: x}}}]}`)
	require.Equal(t, []string{"p/any-cm"}, w.interested(cm, obj("a")))
	w.setInterests("p/any-cm", nil)
	require.Empty(t, w.interested(cm, obj("a")))
}

func TestThrottle(t *testing.T) {
	p := &policyv1.ConfigurationPolicy{}
	p.Generation = 2
	p.Spec.EvaluationInterval = policyv1.EvaluationInterval{Compliant: "10m", NonCompliant: "never"}
	d, never := interval(p, policyv1.Compliant)
	require.Equal(t, "10m0s", d.String())
	require.False(t, never)
	_, never = interval(p, policyv1.NonCompliant)
	require.True(t, never)

	// After a restart, "never" holds for the generation already evaluated...
	r := &Runner{state: map[string]*policyState{}}
	p.Status = policyv1.ConfigurationPolicyStatus{ComplianceState: policyv1.NonCompliant, LastEvaluatedGeneration: 2}
	_, skip := r.throttle("k", p)
	require.True(t, skip)
	// ...but not for a new one.
	p.Generation = 3
	_, skip = r.throttle("k", p)
	require.False(t, skip)
}
