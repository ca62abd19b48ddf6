package placement_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub/placement/ops"
	"flotilla.dev/flotilla/test/testenv"
)

// TestOps drives the CLI's operations end to end: set, bind, create, list.
func TestOps(t *testing.T) {
	ctx := t.Context()
	require.NoError(t, hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ops"}}))
	for _, n := range []string{"ops-1", "ops-2"} {
		require.NoError(t, hub.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"tier": n}}}))
		require.NoError(t, testenv.MarkAccepted(ctx, hub, n))
	}

	// All or nothing: a missing cluster changes nothing.
	var progress bytes.Buffer
	err := ops.SetClusterSet(ctx, hub, ops.SetOptions{Set: "ops", Clusters: []string{"ops-1", "ops-2", "ops-missing"}, Progress: &progress})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `cluster "ops-missing" not found`)
	assert.Contains(t, err.Error(), "no cluster was moved")
	assert.Empty(t, progress.String())
	assert.True(t, apierrors.IsNotFound(hub.Get(ctx, client.ObjectKey{Name: "ops"}, &clusterv1beta2.ManagedClusterSet{})), "no set created")
	for _, n := range []string{"ops-1", "ops-2"} {
		mc := &clusterv1.ManagedCluster{}
		require.NoError(t, hub.Get(ctx, client.ObjectKey{Name: n}, mc))
		// The hub may have put a new cluster into set "default"; it is not in "ops".
		assert.NotEqual(t, "ops", mc.Labels[clusterv1beta2.ClusterSetLabel], n)
	}

	require.NoError(t, ops.SetClusterSet(ctx, hub, ops.SetOptions{Set: "ops", Clusters: []string{"ops-1", "ops-2"}, Progress: &progress}))
	assert.Contains(t, progress.String(), `ManagedClusterSet "ops" created`)
	assert.Contains(t, progress.String(), "cluster ops-2 moved into set ops")

	_, err = ops.BindClusterSet(ctx, hub, ops.BindOptions{Set: "ops", Namespace: "ops-nowhere"})
	assert.ErrorContains(t, err, `namespace "ops-nowhere" does not exist`)
	_, err = ops.BindClusterSet(ctx, hub, ops.BindOptions{Set: "ops-ghost", Namespace: "ops"})
	assert.ErrorContains(t, err, `ManagedClusterSet "ops-ghost" does not exist`)
	created, err := ops.BindClusterSet(ctx, hub, ops.BindOptions{Set: "ops", Namespace: "ops"})
	require.NoError(t, err)
	assert.True(t, created)
	created, err = ops.BindClusterSet(ctx, hub, ops.BindOptions{Set: "ops", Namespace: "ops"})
	require.NoError(t, err, "binding twice is fine")
	assert.False(t, created)

	one := int32(1)
	_, err = ops.CreatePlacement(ctx, hub, ops.CreateOptions{Name: "pick", Namespace: "ops", ClusterSets: []string{"ops"},
		Labels: map[string]string{"tier": "ops-2"}, NumberOfClusters: &one})
	require.NoError(t, err)
	_, err = ops.CreatePlacement(ctx, hub, ops.CreateOptions{Name: "pick", Namespace: "ops"})
	assert.ErrorContains(t, err, "already exists")
	_, err = ops.CreatePlacement(ctx, hub, ops.CreateOptions{Name: "Bad_Name", Namespace: "ops"})
	assert.ErrorContains(t, err, "is invalid")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		views, err := ops.ListPlacements(ctx, hub, ops.ListOptions{Namespace: "ops"})
		assert.NoError(c, err)
		if assert.Len(c, views, 1) {
			assert.Equal(c, []string{"ops-2"}, views[0].SelectedClusters)
		}
		decided, err := ops.DecidedClusters(ctx, hub, "ops", "pick")
		assert.NoError(c, err)
		assert.Equal(c, []string{"ops-2"}, decided)
	}, timeout, tick)
	_, err = ops.DecidedClusters(ctx, hub, "ops", "nope")
	assert.ErrorContains(t, err, "placement ops/nope not found")
}
