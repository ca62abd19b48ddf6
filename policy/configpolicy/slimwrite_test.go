package configpolicy_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// managers lists the field managers the apiserver records for an object.
func managers(entries []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Manager)
	}
	return out
}

// The engine caches objects without managedFields; enforcing from that cache
// must not lose anything: the update keeps the object's other keys, labels
// and annotations, and the apiserver keeps every manager's record (the
// engine's own joins them). The policy's status writes keep its creator's
// record too.
func TestEnforceFromSlimCacheKeepsTheObjectWhole(t *testing.T) {
	ns := namespace(t, "enforce-slim", nil)
	_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"level":"debug"}}`}},
		Data: map[string]string{"level": "debug", "other": "kept"},
	}, metav1.CreateOptions{FieldManager: "someone"})
	require.NoError(t, err)
	apply(t, ns, `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: settings}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: enforce-slim}, data: {level: info}}
`)
	waitFor(t, ns, "settings", policyv1.Compliant, "configmaps [settings] found as specified in namespace enforce-slim")

	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"level": "info", "other": "kept"}, cm.Data)
	require.Equal(t, map[string]string{"team": "a"}, cm.Labels)
	require.Equal(t, `{"data":{"level":"debug"}}`, cm.Annotations["kubectl.kubernetes.io/last-applied-configuration"])
	require.Subset(t, managers(cm.ManagedFields), []string{"someone", "flotilla-policy"})

	p := getPolicy(t, ns, "settings")
	require.Subset(t, managers(p.ManagedFields), []string{"flotilla-policy"})
	require.GreaterOrEqual(t, len(p.ManagedFields), 2, "the creator's record stays beside the engine's: %v", managers(p.ManagedFields))
}
