package configpolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// The compliance event names the policy and state; it goes to the owning
// OCM Policy when there is one (as the governance framework expects).
func TestComplianceEvent(t *testing.T) {
	r := &Runner{opts: Options{EventSource: "flotilla-policy", Now: func() time.Time { return time.Unix(1700000000, 0) }}}
	p := &policyv1.ConfigurationPolicy{}
	p.Namespace, p.Name, p.UID = "cluster1", "baseline", "cp-uid"
	now := time.Unix(1700000000, 0)

	ev := r.event(p, policyv1.NonCompliant, "NonCompliant; violation - namespaces [prod] not found", now)
	require.Equal(t, "policy: cluster1/baseline", ev.Reason)
	require.Equal(t, "NonCompliant; violation - namespaces [prod] not found", ev.Message)
	require.Equal(t, corev1.EventTypeWarning, ev.Type)
	require.Equal(t, "ConfigurationPolicy", ev.InvolvedObject.Kind)
	require.Equal(t, "cluster1", ev.Namespace)

	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "policy.open-cluster-management.io/v1", Kind: "Policy", Name: "default.baseline", UID: "p-uid"}}
	ev = r.event(p, policyv1.Compliant, "Compliant; notification - namespaces [prod] found as specified", now)
	require.Equal(t, corev1.EventTypeNormal, ev.Type)
	require.Equal(t, "Policy", ev.InvolvedObject.Kind)
	require.Equal(t, "default.baseline", ev.InvolvedObject.Name)
	require.Equal(t, "policy: cluster1/baseline", ev.Reason, "the reason still names the ConfigurationPolicy")
}
