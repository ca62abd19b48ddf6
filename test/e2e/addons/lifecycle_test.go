package addons_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/ops"
)

// TestPreDeleteHook: disabling an addon with a pre-delete hook delivers the
// hook work and keeps everything until the hook Pod succeeded on the cluster.
func TestPreDeleteHook(t *testing.T) {
	ctx := context.Background()
	_, err := ops.Enable(ctx, hubCli, ops.EnableOptions{Names: []string{"hooked"}, Clusters: []string{"cluster1"}})
	require.NoError(t, err)
	eventuallyCondition(t, "cluster1", "hooked", addonv1alpha1.ManagedClusterAddOnManifestApplied, metav1.ConditionTrue)
	_, err = spoke(0).CoreV1().Pods("default").Get(ctx, "hooked-cleanup", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the hook does not run while the addon is installed")

	_, err = ops.Disable(ctx, hubCli, ops.DisableOptions{Names: []string{"hooked"}, Clusters: []string{"cluster1"}})
	require.NoError(t, err)
	var pod *corev1.Pod
	require.Eventually(t, func() bool {
		pod, err = spoke(0).CoreV1().Pods("default").Get(ctx, "hooked-cleanup", metav1.GetOptions{})
		return err == nil
	}, timeout, tick, "the hook Pod is delivered on disable")
	var hook workv1.ManifestWork
	require.NoError(t, hubCli.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "addon-hooked-pre-delete"}, &hook))
	_, err = getAddon("cluster1", "hooked")
	require.NoError(t, err, "the addon stays while its hook runs")
	_, err = spoke(0).CoreV1().ConfigMaps("default").Get(ctx, "hooked", metav1.GetOptions{})
	require.NoError(t, err, "its manifests stay while its hook runs")

	// No kubelet here: play it, the hook Pod succeeds (again, should the work
	// agent have replaced it).
	require.Eventually(t, func() bool {
		if _, err := getAddon("cluster1", "hooked"); apierrors.IsNotFound(err) {
			return true
		}
		if pod, err = spoke(0).CoreV1().Pods("default").Get(ctx, "hooked-cleanup", metav1.GetOptions{}); err == nil && pod.Status.Phase != corev1.PodSucceeded {
			pod.Status.Phase = corev1.PodSucceeded
			_, _ = spoke(0).CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		}
		return false
	}, timeout, tick, "the addon goes once its hook succeeded")
	require.Eventually(t, func() bool {
		_, err := spoke(0).CoreV1().ConfigMaps("default").Get(ctx, "hooked", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, timeout, tick, "its manifests are removed from the cluster")
}

// TestDeploymentConfig: a missing AddOnDeploymentConfig is a Configured=False
// condition naming it; once it exists the addon is configured with its spec
// hash and its agentInstallNamespace, and a change rolls out a new hash.
func TestDeploymentConfig(t *testing.T) {
	ctx := context.Background()
	m := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "placed", Namespace: "cluster2"},
		Spec: addonv1alpha1.ManagedClusterAddOnSpec{Configs: []addonv1alpha1.AddOnConfig{{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
			ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: "cluster2", Name: "tuning"}}}}}
	require.NoError(t, hubCli.Create(ctx, m))
	t.Cleanup(func() { disable(t, "cluster2", "placed") })
	missing := eventuallyCondition(t, "cluster2", "placed", addonv1alpha1.ManagedClusterAddOnConditionConfigured, metav1.ConditionFalse)
	assert.Contains(t, missing.Message, "AddOnDeploymentConfig cluster2/tuning")

	adc := &addonv1alpha1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Name: "tuning", Namespace: "cluster2"},
		Spec: addonv1alpha1.AddOnDeploymentConfigSpec{AgentInstallNamespace: "tuned-addons",
			CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "level", Value: "1"}}}}
	require.NoError(t, hubCli.Create(ctx, adc))
	eventuallyCondition(t, "cluster2", "placed", addonv1alpha1.ManagedClusterAddOnConditionConfigured, metav1.ConditionTrue)
	hash := func() (desired, applied string) {
		got, err := getAddon("cluster2", "placed")
		if err != nil || len(got.Status.ConfigReferences) != 1 || got.Status.ConfigReferences[0].DesiredConfig == nil {
			return "", ""
		}
		ref := got.Status.ConfigReferences[0]
		if ref.LastAppliedConfig != nil {
			applied = ref.LastAppliedConfig.SpecHash
		}
		return ref.DesiredConfig.SpecHash, applied
	}
	var first string
	require.Eventually(t, func() bool {
		d, a := hash()
		first = d
		return d != "" && d == a
	}, timeout, tick, "configReferences shows the applied spec hash")
	got, err := getAddon("cluster2", "placed")
	require.NoError(t, err)
	assert.Equal(t, "tuned-addons", got.Status.Namespace)

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := hubCli.Get(ctx, client.ObjectKeyFromObject(adc), adc); err != nil {
			return err
		}
		adc.Spec.CustomizedVariables[0].Value = "2"
		return hubCli.Update(ctx, adc)
	}))
	require.Eventually(t, func() bool {
		d, a := hash()
		return d != "" && d != first && d == a
	}, timeout, tick, "a config change rolls out and shows its new hash")
	var w workv1.ManifestWork
	require.NoError(t, hubCli.Get(ctx, client.ObjectKey{Namespace: "cluster2", Name: "addon-placed-deploy-0"}, &w))
	assert.NotEmpty(t, w.Annotations["addon.flotilla.dev/config-hash"])
	d, _ := hash()
	assert.JSONEq(t, `{"addondeploymentconfigs.addon.open-cluster-management.io/cluster2/tuning":"`+d+`"}`,
		w.Annotations[workv1.ManifestConfigSpecHashAnnotationKey], "OCM's annotation names the config and its hash")
}
