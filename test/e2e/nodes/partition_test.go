//go:build nodes

package nodes_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/klusterlet/registration"
)

// TestPartition cuts a managed cluster's Pods off the hub with `flotilla dev
// partition` (iptables rules the environment records): the cluster goes
// Unknown and tainted unreachable on the hub while what it already runs keeps
// running; a work created meanwhile waits, and one deleted meanwhile stays;
// `dev heal` brings it back Available, untainted, with the one work applied
// and the other removed. A partition left in place is removed by
// `dev down`.
func TestPartition(t *testing.T) {
	ctx := context.Background()
	env := startEnv(t, "fp-", 1)
	dataDir := env.dataDir

	hub := config(t, filepath.Join(dataDir, "hub.kubeconfig"))
	spoke := kubernetes.NewForConfigOrDie(config(t, filepath.Join(dataDir, "clusters", "cluster1.kubeconfig")))
	clusters := clusterclient.NewForConfigOrDie(hub).ClusterV1().ManagedClusters()
	works := workclient.NewForConfigOrDie(hub).WorkV1().ManifestWorks("cluster1")

	// A short lease, so that a silent cluster is noticed within seconds (5 x 5 s).
	_, err := clusters.Patch(ctx, "cluster1", types.MergePatchType, []byte(`{"spec":{"leaseDurationSeconds":5}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	configMapWork := func(name string) *workv1.ManifestWork {
		cm := raw(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "default"}, "data": map[string]any{"k": "v"}})
		return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: cm}}}}}
	}
	applied := func(c *assert.CollectT, name string) {
		w, err := works.Get(ctx, name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.True(c, meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied), "work %s Applied", name)
		_, err = spoke.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		assert.NoError(c, err, "ConfigMap %s on the cluster", name)
	}
	for _, name := range []string{"before", "removed"} {
		_, err = works.Create(ctx, configMapWork(name), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) { applied(c, "before"); applied(c, "removed") }, timeout, tick)

	unreachable := func(mc *clusterv1.ManagedCluster) bool {
		for _, taint := range mc.Spec.Taints {
			if taint.Key == clusterv1.ManagedClusterTaintUnreachable {
				return true
			}
		}
		return false
	}

	t.Run("a partitioned cluster goes Unknown and tainted, and keeps running", func(t *testing.T) {
		out, err := flotillaRun(t, "dev", "partition", "cluster1", "--data-dir", dataDir)
		require.NoError(t, err, out)
		start := time.Now()
		// Right after the cut, while the klusterlet's watch of the hub is
		// still open on its side: a work is created and another deleted on
		// the hub. Neither may reach the cluster before the heal (checked
		// below, once the hub has noticed the partition, 25 s on). With only
		// the cluster's packets dropped, the hub's events still came through
		// that watch, and both did.
		_, err = works.Create(ctx, configMapWork("during"), metav1.CreateOptions{})
		require.NoError(t, err)
		require.NoError(t, works.Delete(ctx, "removed", metav1.DeleteOptions{}))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			mc, err := clusters.Get(ctx, "cluster1", metav1.GetOptions{})
			require.NoError(c, err)
			cond := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
			require.NotNil(c, cond)
			assert.Equal(c, metav1.ConditionUnknown, cond.Status)
			assert.True(c, unreachable(mc), "tainted %s", clusterv1.ManagedClusterTaintUnreachable)
		}, timeout, tick)
		t.Logf("Unknown and tainted %s after the partition", time.Since(start).Round(time.Second))
		// What the cluster runs is untouched: the ConfigMap is there, the klusterlet Pod still runs.
		_, err = spoke.CoreV1().ConfigMaps("default").Get(ctx, "before", metav1.GetOptions{})
		require.NoError(t, err)
		pods, err := spoke.CoreV1().Pods(registration.DefaultAgentNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=klusterlet"})
		require.NoError(t, err)
		require.Len(t, pods.Items, 1)
		assert.Equal(t, corev1.PodRunning, pods.Items[0].Status.Phase)
		// The work deleted on the hub is still applied (a removal cannot come
		// back), the one created there has not arrived.
		_, err = spoke.CoreV1().ConfigMaps("default").Get(ctx, "removed", metav1.GetOptions{})
		assert.NoError(t, err, "a work deleted on the hub was removed from a cluster cut off from it")
		_, err = spoke.CoreV1().ConfigMaps("default").Get(ctx, "during", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "a work created on the hub reached a cluster cut off from it: %v", err)
	})

	t.Run("healed, it is Available again, untainted, and gets the work", func(t *testing.T) {
		out, err := flotillaRun(t, "dev", "heal", "cluster1", "--data-dir", dataDir)
		require.NoError(t, err, out)
		start := time.Now()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			mc, err := clusters.Get(ctx, "cluster1", metav1.GetOptions{})
			require.NoError(c, err)
			assert.True(c, meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable), "Available")
			assert.False(c, unreachable(mc), "untainted")
			applied(c, "during")
			applied(c, "before")
			_, err = spoke.CoreV1().ConfigMaps("default").Get(ctx, "removed", metav1.GetOptions{})
			assert.True(c, apierrors.IsNotFound(err), "ConfigMap of the work deleted during the partition removed after the heal: %v", err)
			_, err = works.Get(ctx, "removed", metav1.GetOptions{})
			assert.True(c, apierrors.IsNotFound(err), "work deleted during the partition gone from the hub: %v", err)
		}, timeout, tick)
		t.Logf("converged %s after the heal", time.Since(start).Round(time.Second))
	})

	t.Run("a partition left in place is undone by dev down", func(t *testing.T) {
		out, err := flotillaRun(t, "dev", "partition", "cluster1", "--data-dir", dataDir)
		require.NoError(t, err, out)
		env.down(t)
	})
}
