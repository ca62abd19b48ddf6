package configpolicy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// A ConfigMap (or Secret) a template reads is watched like a governed
// object: when it changes, a policy evaluated on changes is evaluated again
// and enforce copies the new value, with nothing else changing, as
// upstream's watches of template lookups do.
func TestTemplateSourceChangeReevaluates(t *testing.T) {
	ns := namespace(t, "template-source", nil)
	_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "source"}, Data: map[string]string{"level": "info"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	apply(t, ns, `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: copy-level}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: target, namespace: template-source}
      data: {level: '{{ fromConfigMap "template-source" "source" "level" }}'}
`)
	target := func(want string) {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "target", metav1.GetOptions{})
			require.NoError(c, err)
			assert.Equal(c, want, cm.Data["level"])
		}, 60*time.Second, 50*time.Millisecond)
	}
	target("info")
	waitFor(t, ns, "copy-level", policyv1.Compliant, "configmaps [target] found as specified in namespace template-source")

	src, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "source", metav1.GetOptions{})
	require.NoError(t, err)
	src.Data["level"] = "debug"
	_, err = kube.CoreV1().ConfigMaps(ns).Update(ctx, src, metav1.UpdateOptions{})
	require.NoError(t, err)
	target("debug")

	// The source gone: the template fails, said on the policy.
	require.NoError(t, kube.CoreV1().ConfigMaps(ns).Delete(ctx, "source", metav1.DeleteOptions{}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		p := getPolicy(t, ns, "copy-level")
		assert.Equal(c, policyv1.NonCompliant, p.Status.ComplianceState)
		require.NotEmpty(c, p.Status.CompliancyDetails)
		assert.Contains(c, p.Status.CompliancyDetails[0].Conditions[0].Message, `failed getting the ConfigMap source from template-source`)
	}, 60*time.Second, 50*time.Millisecond)
}
