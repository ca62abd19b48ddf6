package work_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/klusterlet/work"
)

// startAgent runs cluster2's agent until the returned stop is called.
func startAgent(t *testing.T) (stop func()) { return startAgentWith(t, syncInterval) }

// startAgentWith runs cluster2's agent with the given status sync interval.
func startAgentWith(t *testing.T, interval time.Duration) (stop func()) {
	return startAgentOn(t, agentHubConfig(env.Hub.Config, "cluster2"), env.Clusters[1].Config, interval)
}

// startAgentOn runs cluster2's agent on the given configs (wrapped to watch
// or break its requests) until stop or the end of the test.
func startAgentOn(t *testing.T, hubCfg, spokeCfg *rest.Config, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- work.Run(ctx, work.Options{
			HubConfig:          hubCfg,
			SpokeConfig:        spokeCfg,
			ClusterName:        "cluster2",
			StatusSyncInterval: interval,
		})
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		require.NoError(t, <-done)
	}
	t.Cleanup(stop)
	return stop
}

func TestRestartDuringApplyLosesAndDuplicatesNothing(t *testing.T) {
	ctx := context.Background()
	spoke2 := kubernetes.NewForConfigOrDie(env.Clusters[1].Config)
	scheme := runtime.NewScheme()
	_ = workv1.Install(scheme)
	spoke2c, err := client.New(env.Clusters[1].Config, client.Options{Scheme: scheme})
	require.NoError(t, err)

	const n = 60
	objs := []interface{}{namespace("restart")}
	for i := 0; i < n; i++ {
		objs = append(objs, configMap("restart", fmt.Sprintf("c%02d", i), map[string]interface{}{"i": fmt.Sprint(i)}))
	}
	newWork(t, "cluster2", "restart", objs...).create(t)

	stop := startAgent(t)
	// Stop the agent in the middle of applying: some configmaps exist, not all.
	require.Eventually(t, func() bool {
		l, err := spoke2.CoreV1().ConfigMaps("restart").List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) > 1
	}, wait, tick/10)
	stop()
	l, err := spoke2.CoreV1().ConfigMaps("restart").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	t.Logf("agent stopped with %d of %d configmaps applied", len(l.Items)-1, n) // minus kube-root-ca.crt

	startAgent(t)
	w := waitApplied(t, "cluster2", "restart")
	assert.Len(t, w.Status.ResourceStatus.Manifests, n+1)

	amw := recordedWork(t, spoke2c, "restart", n+1)
	l, err = spoke2.CoreV1().ConfigMaps("restart").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	live := map[string]string{}
	for _, cm := range l.Items {
		if cm.Name == "kube-root-ca.crt" {
			continue
		}
		live[cm.Name] = string(cm.UID)
		require.Len(t, cm.OwnerReferences, 1, "configmap %s: exactly one owner", cm.Name)
		assert.Equal(t, amw.UID, cm.OwnerReferences[0].UID)
		assert.Equal(t, fmt.Sprint(cm.Name[1:]), fmt.Sprintf("%02s", cm.Data["i"]))
	}
	assert.Len(t, live, n, "every configmap exists, once")
	recorded := map[string]string{}
	for _, r := range amw.Status.AppliedResources {
		key := r.Resource + "/" + r.Name
		_, dup := recorded[key]
		assert.False(t, dup, "recorded twice: %s", key)
		recorded[key] = r.UID
	}
	assert.Len(t, recorded, n+1)
	for name, uid := range live {
		assert.Equal(t, uid, recorded["configmaps/"+name], "record of %s has the live UID", name)
	}
	deleteWork(t, "cluster2", "restart")
}

func TestAgentCannotTouchAnotherClustersWorks(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = workv1.Install(scheme)
	as1, err := client.New(agentHubConfig(env.Hub.Config, "cluster1"), client.Options{Scheme: scheme})
	require.NoError(t, err)

	other := newWork(t, "cluster2", "private", configMap("default", "x", nil)).create(t)

	forbidden := func(what string, err error) {
		t.Helper()
		assert.True(t, apierrors.IsForbidden(err), "%s: want 403 Forbidden, got %v", what, err)
	}
	forbidden("list cluster2's works", as1.List(ctx, &workv1.ManifestWorkList{}, client.InNamespace("cluster2")))
	forbidden("get cluster2's work", as1.Get(ctx, client.ObjectKeyFromObject(other), &workv1.ManifestWork{}))
	forbidden("list works in all namespaces", as1.List(ctx, &workv1.ManifestWorkList{}))
	forbidden("create a work in cluster2", as1.Create(ctx, &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: "sneaky", Namespace: "cluster2"},
		Spec:       workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{manifest(t, configMap("default", "y", nil))}}},
	}))
	w := getWork(t, "cluster2", "private")
	w.Status.Conditions = []metav1.Condition{{Type: "Applied", Status: "True", Reason: "Forged", LastTransitionTime: metav1.Now()}}
	forbidden("write cluster2's work status", as1.Status().Update(ctx, w))
	forbidden("update cluster2's work", as1.Update(ctx, getWork(t, "cluster2", "private")))
	forbidden("delete cluster2's work", as1.Delete(ctx, getWork(t, "cluster2", "private")))
	forbidden("create a work in its own namespace", as1.Create(ctx, &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: "self-made", Namespace: "cluster1"},
		Spec:       workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{manifest(t, configMap("default", "y", nil))}}},
	}))

	// Its own namespace is readable.
	require.NoError(t, as1.List(ctx, &workv1.ManifestWorkList{}, client.InNamespace("cluster1")))
	require.NoError(t, hub.Delete(ctx, other))
}

// TestDriftRepairIsWatchDriven runs an agent whose periodic re-check is an hour
// away: only its watch on the applied resources can repair the drift.
func TestDriftRepairIsWatchDriven(t *testing.T) {
	ctx := context.Background()
	spoke2 := kubernetes.NewForConfigOrDie(env.Clusters[1].Config)
	startAgentWith(t, time.Hour)
	newWork(t, "cluster2", "watched", namespace("watched"), configMap("watched", "c", map[string]interface{}{"k": "v"})).create(t)
	waitApplied(t, "cluster2", "watched")

	cm, err := spoke2.CoreV1().ConfigMaps("watched").Get(ctx, "c", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data["k"] = "tampered"
	_, err = spoke2.CoreV1().ConfigMaps("watched").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		cm, err := spoke2.CoreV1().ConfigMaps("watched").Get(ctx, "c", metav1.GetOptions{})
		return err == nil && cm.Data["k"] == "v"
	}, wait, tick, "the edit is reverted by the watch")

	require.NoError(t, spoke2.CoreV1().ConfigMaps("watched").Delete(ctx, "c", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := spoke2.CoreV1().ConfigMaps("watched").Get(ctx, "c", metav1.GetOptions{})
		return err == nil
	}, wait, tick, "the deleted configmap is re-created by the watch")
	deleteWork(t, "cluster2", "watched")
}
