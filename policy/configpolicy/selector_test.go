package configpolicy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// waitForAll waits until the policy is in state and its templates' condition
// messages are msgs, in order.
func waitForAll(t *testing.T, ns, name string, state policyv1.ComplianceState, msgs ...string) *policyv1.ConfigurationPolicy {
	t.Helper()
	var p *policyv1.ConfigurationPolicy
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		p = getPolicy(t, ns, name)
		var got []string
		for _, d := range p.Status.CompliancyDetails {
			got = append(got, d.Conditions[0].Message)
		}
		assert.Equal(c, state, p.Status.ComplianceState)
		assert.Equal(c, msgs, got)
	}, 60*time.Second, 50*time.Millisecond)
	return p
}

// An object template without a name but with an objectSelector is enforced
// on each selected object, as upstream's: a selected object that differs is
// updated, a selected object a MustNotHave template matches is deleted;
// objects the selector does not select are left alone.
func TestEnforceObjectSelector(t *testing.T) {
	ns := namespace(t, "enforce-selector", nil)
	apply(t, ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: app-a, labels: {team: shop}}, data: {level: debug}}`)
	apply(t, ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: app-b, labels: {team: shop}}, data: {level: info}}`)
	apply(t, ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: unlabelled}, data: {level: debug}}`)
	for _, s := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"tier": "frontend"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web-internal", Labels: map[string]string{"tier": "frontend"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Port: 80}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "debug"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 9090}}}},
	} {
		_, err := kube.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	apply(t, ns, `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: selected}
spec:
  remediationAction: enforce
  namespaceSelector: {include: [enforce-selector]}
  object-templates:
  - complianceType: musthave
    objectSelector: {matchLabels: {team: shop}}
    objectDefinition: {apiVersion: v1, kind: ConfigMap, data: {level: info}}
  - complianceType: mustnothave
    objectSelector: {matchLabels: {tier: frontend}}
    objectDefinition: {apiVersion: v1, kind: Service, spec: {type: NodePort}}
`)
	p := waitForAll(t, ns, "selected", policyv1.Compliant,
		"configmaps [app-a, app-b] found as specified in namespace enforce-selector",
		"services missing as expected in namespace enforce-selector")
	var hist []string
	for _, h := range p.Status.History {
		hist = append(hist, h.Message)
	}
	require.Contains(t, hist, "Compliant; notification - configmaps [app-b] found as specified in namespace enforce-selector; "+
		"configmaps [app-a] was updated successfully in namespace enforce-selector; "+
		"notification - services [web] was deleted successfully in namespace enforce-selector")

	for name, level := range map[string]string{"app-a": "info", "app-b": "info", "unlabelled": "debug"} {
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, level, cm.Data["level"], name)
	}
	_, err := kube.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the selected NodePort Service is deleted: %v", err)
	for _, name := range []string{"web-internal", "debug"} {
		_, err := kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, "%s is not selected and like the template at once", name)
	}
}
