// Package apiserverrestart_test checks, on a real control plane with the
// whole hub (hub.Run), that the hub notices its apiserver restarting (a new
// identity lease holder) and starts its controllers again with caches listed
// afresh, and that it keeps serving: an accepted cluster gets its namespace and
// a Placement made afterwards decides it.
package apiserverrestart_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/internal/controlplane"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/test/testenv"
)

const (
	timeout = 2 * time.Minute
	tick    = 200 * time.Millisecond
)

// cacheRestarts reads flotilla_hub_cache_restarts_total from the process's registry.
func cacheRestarts(t *testing.T) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "flotilla_hub_cache_restarts_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("flotilla_hub_cache_restarts_total is not registered")
	return 0
}

func TestHubListsAfreshAfterItsAPIServerRestarts(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp := env.Hub

	ready := make(chan struct{})
	hubDone := make(chan error, 1)
	go func() {
		hubDone <- hub.Run(ctx, hub.Options{Config: cp.Config, APIServerCheckInterval: tick, Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-hubDone:
		t.Fatalf("hub: %v", err)
	case <-time.After(timeout):
		t.Fatal("hub did not become ready")
	}
	defer func() { cancel(); <-hubDone }()
	before := cacheRestarts(t)

	// The whole control plane stops and starts again on its data (the hub-etcd
	// fault of make chaos): a new kube-apiserver, a new identity lease holder.
	require.NoError(t, cp.Stop())
	restarted, err := controlplane.Start(ctx, controlplane.Config{Name: cp.Name, Dir: cp.Dir, FastEtcd: true})
	require.NoError(t, err, "restart the hub control plane on its data")
	t.Cleanup(func() { _ = restarted.Stop() })

	require.Eventually(t, func() bool { return cacheRestarts(t) == before+1 }, timeout, tick,
		"the hub did not start its controllers again after its apiserver restarted")
	select {
	case err := <-hubDone:
		t.Fatalf("the hub stopped instead of starting again: %v", err)
	default:
	}

	// It still serves: an accepted cluster gets its namespace and HubAccepted,
	// and a Placement made now decides it.
	admin, err := client.New(restarted.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	require.NoError(t, admin.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "after"}}))
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}))
	require.NoError(t, admin.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "after", Namespace: "tenant"}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "after"}}))
	require.NoError(t, admin.Create(ctx, &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "after-restart", Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "after"}},
		Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		mc := &clusterv1.ManagedCluster{}
		require.NoError(c, admin.Get(ctx, client.ObjectKey{Name: "after-restart"}, mc))
		assert.True(c, meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted))
		assert.NoError(c, admin.Get(ctx, client.ObjectKey{Name: "after-restart"}, &corev1.Namespace{}))
	}, timeout, tick, "the restarted hub did not accept the cluster")

	// The cluster has no agent: tolerate its unreachable/unavailable taints.
	require.NoError(t, admin.Create(ctx, &clusterv1beta1.Placement{
		ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: "tenant"},
		Spec: clusterv1beta1.PlacementSpec{Tolerations: []clusterv1beta1.Toleration{
			{Key: clusterv1.ManagedClusterTaintUnreachable, Operator: clusterv1beta1.TolerationOpExists},
			{Key: clusterv1.ManagedClusterTaintUnavailable, Operator: clusterv1beta1.TolerationOpExists},
		}},
	}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		decisions := &clusterv1beta1.PlacementDecisionList{}
		require.NoError(c, admin.List(ctx, decisions, client.InNamespace("tenant")))
		var names []string
		for _, d := range decisions.Items {
			for _, cd := range d.Status.Decisions {
				names = append(names, cd.ClusterName)
			}
		}
		assert.Equal(c, []string{"after-restart"}, names)
	}, timeout, tick, "the restarted hub did not schedule the Placement")
	assert.Equal(t, before+1, cacheRestarts(t), "one apiserver restart, one start of the controllers")
}
