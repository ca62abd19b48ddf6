package configpolicy

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

func TestSameObject(t *testing.T) {
	obj := func(rv string, gen int64, data string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "resourceVersion": rv, "generation": gen,
				"managedFields": []any{map[string]any{"manager": rv}}},
			"data": map[string]any{"a": data},
		}}
		return u
	}
	require.True(t, sameObject(obj("1", 1, "x"), obj("2", 2, "x")), "server-owned fields do not count")
	require.False(t, sameObject(obj("1", 1, "x"), obj("1", 1, "y")))
	withStatus := obj("3", 1, "x")
	withStatus.Object["status"] = map[string]any{"phase": "changed"}
	require.True(t, sameObject(obj("1", 1, "x"), withStatus), "an update never changes status")
}

func TestStatusEqualIgnoresLastEvaluated(t *testing.T) {
	a := policyv1.ConfigurationPolicyStatus{ComplianceState: policyv1.Compliant, LastEvaluated: "2026-01-01T00:00:00Z"}
	b := a
	b.LastEvaluated = "2026-01-01T00:05:00Z"
	require.True(t, statusEqual(a, b))
	b.ComplianceState = policyv1.NonCompliant
	require.False(t, statusEqual(a, b))
}

func TestJSONList(t *testing.T) {
	require.Equal(t, "null", jsonList(nil))
	require.Equal(t, `["a","b\"c"]`, jsonList([]string{"a", `b"c`}))
}
