package klusterlet

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/test/testenv"
)

// TestWatchOwnClusterOnARealHub: the watch of the cluster's own
// ManagedCluster says "deliver nothing" when it starts and finds none (a
// cluster deleted while the watch was down fires no event on the first list),
// and follows an acceptance and a deletion.
func TestWatchOwnClusterOnARealHub(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan delivery, 1)
	done := make(chan error, 1)
	go func() { done <- watchOwnCluster(ctx, env.Hub.Config, "c1", out, logr.Discard()) }()
	next := func() delivery {
		select {
		case d := <-out:
			return d
		case <-time.After(time.Minute):
			t.Fatal("no delivery within a minute")
			return deliverNothing
		}
	}
	require.Equal(t, deliverNothing, next(), "no ManagedCluster at the start: nothing")

	cs := clusterclient.NewForConfigOrDie(env.Hub.Config)
	mc, err := cs.ClusterV1().ManagedClusters().Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}, metav1.CreateOptions{})
	require.NoError(t, err)
	testenv.SetAccepted(mc)
	_, err = cs.ClusterV1().ManagedClusters().UpdateStatus(ctx, mc, metav1.UpdateOptions{})
	require.NoError(t, err)
	for d := next(); d != deliverAll; d = next() {
		require.Equal(t, deliverNothing, d, "created, not yet granted")
	}
	require.NoError(t, cs.ClusterV1().ManagedClusters().Delete(ctx, "c1", metav1.DeleteOptions{}))
	for d := next(); d != deliverNothing; d = next() {
		require.Equal(t, deliverCleanup, d, "being deleted")
	}
	cancel()
	require.NoError(t, <-done)
}
