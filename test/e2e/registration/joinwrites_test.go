package registration_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// TestJoinWritesFewVersions follows one cluster's ManagedCluster from its
// create until it is Available and untainted, every stored version: the
// create already carries the hub's cleanup finalizer and the unreachable
// taint (the mutating webhook: no write of its own for either), and the
// agent reports Joined with Available and its resources in one write.
func TestJoinWritesFewVersions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	const name = "few-writes"
	w, err := clusters(env.Hub.Config).ClusterV1().ManagedClusters().Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	require.NoError(t, err)
	defer w.Stop()
	newAgent(t, env.Clusters[0], name, "agent-"+name).start()
	acceptClusters(t, name)

	var versions []*clusterv1.ManagedCluster
	for ready := false; !ready; {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "the watch ended before the cluster was Available and untainted")
			require.NotEqual(t, watch.Error, ev.Type, "watch error: %v", ev.Object)
			mc := ev.Object.(*clusterv1.ManagedCluster)
			versions = append(versions, mc)
			ready = meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable) && len(mc.Spec.Taints) == 0
		case <-ctx.Done():
			t.Fatalf("the cluster was not Available and untainted in time; %d versions seen", len(versions))
		}
	}

	t.Logf("%d versions from create to Available and untainted", len(versions))
	first := versions[0]
	assert.Contains(t, first.Finalizers, clusterv1.ManagedClusterFinalizer, "the create carries the finalizer")
	assert.True(t, hasTaint(first, clusterv1.ManagedClusterTaintUnreachable), "the create carries the unreachable taint")
	for i, mc := range versions {
		if meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) {
			assert.True(t, meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable),
				"version %d: Joined is reported with Available, in one write", i)
			assert.NotEmpty(t, mc.Status.Version.Kubernetes, "version %d: and with the cluster's version", i)
			break
		}
	}
	// create, accept, the cluster set label, HubAccepted, the agent's status,
	// the taint's removal: six, in some order.
	assert.LessOrEqual(t, len(versions), 6, "versions from create to Available and untainted")
}
