package addons_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/example"
	"flotilla.dev/flotilla/addons/ops"
	"flotilla.dev/flotilla/internal/addonagent"
	"flotilla.dev/flotilla/internal/ocm"
)

// TestExampleAddon enables the example addon on cluster1 with the CLI's
// operation, runs its agent, and checks delivery, registration, the credential's
// limits, health (Available, then Unknown when the agent stops) and disable.
func TestExampleAddon(t *testing.T) {
	ctx := context.Background()
	cluster, ns := "cluster1", ocm.DefaultAddonInstallNamespace

	// The hub registered the shipped addon at start, Manual strategy.
	var cma addonv1alpha1.ClusterManagementAddOn
	require.Eventually(t, func() bool { return hubCli.Get(ctx, client.ObjectKey{Name: example.Name}, &cma) == nil }, timeout, tick)
	assert.Equal(t, addonv1alpha1.AddonInstallStrategyManual, cma.Spec.InstallStrategy.Type)

	_, err := ops.Enable(ctx, hubCli, ops.EnableOptions{Names: []string{example.Name}, Clusters: []string{cluster}})
	require.NoError(t, err)

	// Delivered as addon-example-deploy-0 and applied by the cluster's work agent.
	eventuallyCondition(t, cluster, example.Name, addonv1alpha1.ManagedClusterAddOnManifestApplied, metav1.ConditionTrue)
	var w workv1.ManifestWork
	require.NoError(t, hubCli.Get(ctx, client.ObjectKey{Namespace: cluster, Name: "addon-example-deploy-0"}, &w))
	assert.Equal(t, example.Name, w.Labels[ocm.AddonNameLabel])
	_, err = spoke(0).AppsV1().Deployments(ns).Get(ctx, "example-agent", metav1.GetOptions{})
	require.NoError(t, err, "the agent Deployment is on the managed cluster")

	// Registration: published subject, granted Role, approved CSR, Secret on the spoke.
	reg := eventuallyCondition(t, cluster, example.Name, addonv1alpha1.ManagedClusterAddOnRegistrationApplied, metav1.ConditionTrue)
	assert.Equal(t, addonv1alpha1.RegistrationAppliedSetPermissionApplied, reg.Reason)
	m, err := getAddon(cluster, example.Name)
	require.NoError(t, err)
	assert.Equal(t, ns, m.Status.Namespace)
	require.Len(t, m.Status.Registrations, 1)
	assert.Equal(t, "system:open-cluster-management:cluster:cluster1:addon:example:agent:example-agent", m.Status.Registrations[0].Subject.User)
	assert.Equal(t, []addonv1alpha1.ObjectReference{{Group: "addon.open-cluster-management.io", Resource: "clustermanagementaddons", Name: example.Name}}, m.Status.RelatedObjects)
	var role rbacv1.Role
	require.NoError(t, hubCli.Get(ctx, client.ObjectKey{Namespace: cluster, Name: ocm.AddonRoleName(example.Name)}, &role))

	var sec *corev1.Secret
	require.Eventually(t, func() bool {
		sec, err = spoke(0).CoreV1().Secrets(ns).Get(ctx, "example-hub-kubeconfig", metav1.GetOptions{})
		return err == nil
	}, timeout, tick, "the klusterlet writes the addon's hub credential")
	for _, k := range []string{"kubeconfig", "tls.crt", "tls.key", "cluster-name", "agent-name"} {
		assert.NotEmpty(t, sec.Data[k], k)
	}
	assert.Equal(t, cluster, string(sec.Data["cluster-name"]))
	assert.Equal(t, "example-agent", string(sec.Data["agent-name"]))

	// What the credential may and may not do on the hub.
	cred, err := addonagent.ReadHubCredential(ctx, spoke(0), ns, example.Name)
	require.NoError(t, err)
	asAgent := kubernetes.NewForConfigOrDie(cred.Config)
	_, err = asAgent.CoreV1().ConfigMaps(cluster).List(ctx, metav1.ListOptions{})
	assert.NoError(t, err, "reads ConfigMaps of its own cluster namespace")
	_, err = asAgent.CoreV1().ConfigMaps("cluster2").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "another cluster's namespace: %v", err)
	_, err = asAgent.CoreV1().Secrets(cluster).List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "secrets of its cluster namespace: %v", err)
	_, err = asAgent.CoreV1().ConfigMaps(cluster).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsForbidden(err), "writes: %v", err)
	_, err = asAgent.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "cluster-wide reads: %v", err)

	// Health: the agent renews its lease; it copies hub ConfigMaps with its credential.
	agentCtx, stopAgent := context.WithCancel(ctx)
	agentDone := make(chan error, 1)
	go func() {
		agentDone <- example.RunAgent(agentCtx, example.AgentOptions{SpokeConfig: env.Clusters[0].Config, ClusterName: cluster,
			Interval: 200 * time.Millisecond, LeaseDuration: time.Second})
	}()
	t.Cleanup(func() { stopAgent(); <-agentDone })
	avail := eventuallyCondition(t, cluster, example.Name, addonv1alpha1.ManagedClusterAddOnConditionAvailable, metav1.ConditionTrue)
	assert.Equal(t, addonv1alpha1.AddonAvailableReasonLeaseLeaseUpdated, avail.Reason)

	src := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "greeting", Namespace: cluster, Labels: map[string]string{example.CopyLabel: "true"}},
		Data: map[string]string{"hello": "from the hub"}}
	require.NoError(t, hubCli.Create(ctx, src))
	require.Eventually(t, func() bool {
		got, err := spoke(0).CoreV1().ConfigMaps(ns).Get(ctx, "greeting", metav1.GetOptions{})
		return err == nil && got.Data["hello"] == "from the hub"
	}, timeout, tick, "the agent copies the hub ConfigMap with its hub credential")

	stopAgent()
	<-agentDone
	agentDone <- nil // for the cleanup
	stale := eventuallyCondition(t, cluster, example.Name, addonv1alpha1.ManagedClusterAddOnConditionAvailable, metav1.ConditionUnknown)
	assert.Equal(t, addonv1alpha1.AddonAvailableReasonLeaseUpdateStopped, stale.Reason)

	// get addon shows it.
	rows, err := ops.List(ctx, hubCli, ops.ListOptions{Name: example.Name, Cluster: cluster})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, "Unknown", rows[0].Available)

	// Disable: the ManagedClusterAddOn, its works, its Role and the spoke credential go.
	_, err = ops.Disable(ctx, hubCli, ops.DisableOptions{Names: []string{example.Name}, Clusters: []string{cluster}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := getAddon(cluster, example.Name)
		return apierrors.IsNotFound(err)
	}, timeout, tick, "the ManagedClusterAddOn is removed once its works are gone")
	var works workv1.ManifestWorkList
	require.NoError(t, hubCli.List(ctx, &works, client.InNamespace(cluster), client.MatchingLabels{ocm.AddonNameLabel: example.Name}))
	assert.Empty(t, works.Items)
	assert.True(t, apierrors.IsNotFound(hubCli.Get(ctx, client.ObjectKey{Namespace: cluster, Name: ocm.AddonRoleName(example.Name)}, &role)))
	require.Eventually(t, func() bool {
		_, err := spoke(0).CoreV1().Secrets(ns).Get(ctx, "example-hub-kubeconfig", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, timeout, tick, "the klusterlet removes the credential of a disabled addon")
	require.Eventually(t, func() bool {
		_, err := spoke(0).AppsV1().Deployments(ns).Get(ctx, "example-agent", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, timeout, tick, "the work agent removes the agent's Deployment")
	_, err = asAgent.CoreV1().ConfigMaps(cluster).List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "the old credential lost its rights: %v", err)
	_, err = spoke(0).CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	assert.NoError(t, err, "the shared install namespace stays for other addons")
}
