package work_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	work "flotilla.dev/flotilla/hub/work"
)

func TestFinalizerPatch(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		ok        bool
		path      string
	}{
		{"no finalizers", `{"metadata":{"name":"w"}}`, true, "/metadata/finalizers"},
		{"empty list", `{"metadata":{"finalizers":[]}}`, true, "/metadata/finalizers"},
		{"others", `{"metadata":{"finalizers":["a/b"]}}`, true, "/metadata/finalizers/-"},
		{"has it", `{"metadata":{"finalizers":["a/b","` + workv1.ManifestWorkFinalizer + `"]}}`, false, ""},
		{"unreadable", `{"metadata":{"finalizers":"x"}}`, false, ""},
		{"not JSON", `<`, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, ok := work.FinalizerPatch([]byte(tc.raw))
			require.Equal(t, tc.ok, ok)
			if ok {
				assert.Equal(t, "add", op.Operation)
				assert.Equal(t, tc.path, op.Path)
			}
		})
	}
}

func TestReleasable(t *testing.T) {
	now := metav1.Now()
	created := metav1.NewTime(now.Add(-time.Hour))
	before, after := metav1.NewTime(created.Add(-time.Minute)), metav1.NewTime(created.Add(time.Minute))
	deleting := func(mutate ...func(*workv1.ManifestWork)) *workv1.ManifestWork {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "c", DeletionTimestamp: &now,
			CreationTimestamp: created, Finalizers: []string{workv1.ManifestWorkFinalizer}}}
		for _, m := range mutate {
			m(w)
		}
		return w
	}
	cluster := func(available metav1.ConditionStatus, since metav1.Time) *clusterv1.ManagedCluster {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
		if available != "" {
			mc.Status.Conditions = []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: available, Reason: "r", LastTransitionTime: since}}
		}
		return mc
	}
	agentApplied := func(w *workv1.ManifestWork) {
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete"})
	}
	hubHeld := func(w *workv1.ManifestWork) {
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionFalse, Reason: work.ReasonClusterDenied})
	}
	manifests := func(w *workv1.ManifestWork) {
		w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{}}
	}
	for _, tc := range []struct {
		name string
		w    *workv1.ManifestWork
		mc   *clusterv1.ManagedCluster
		want bool
	}{
		{"no cluster", deleting(), nil, true},
		{"cluster never available", deleting(), cluster("", before), true},
		{"cluster unavailable since before the work", deleting(), cluster(metav1.ConditionFalse, before), true},
		{"cluster unknown since before the work", deleting(), cluster(metav1.ConditionUnknown, before), true},
		{"cluster lost after the work was created: its agent may have applied it", deleting(), cluster(metav1.ConditionUnknown, after), false},
		{"cluster available: its agent will come", deleting(), cluster(metav1.ConditionTrue, before), false},
		{"only the hub's hold condition", deleting(hubHeld), cluster(metav1.ConditionFalse, before), true},
		{"the agent reported Applied", deleting(agentApplied), cluster(metav1.ConditionFalse, before), false},
		{"the agent reported manifests", deleting(manifests), nil, false},
		{"not being deleted", deleting(func(w *workv1.ManifestWork) { w.DeletionTimestamp = nil }), nil, false},
		{"without the finalizer", deleting(func(w *workv1.ManifestWork) { w.Finalizers = []string{"other"} }), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, work.Releasable(tc.w, tc.mc))
		})
	}
}

// TestNewWorksHoldTheAgentsFinalizer: the hub's mutating webhook gives every
// new work the agent's finalizer; a work deleted before its agent reported
// on it is let go when its cluster has not been available since before the
// work was created, and kept otherwise.
func TestNewWorksHoldTheAgentsFinalizer(t *testing.T) {
	_, c, _ := startHub(t)
	ctx := context.Background()
	get := func(name string) *workv1.ManifestWork {
		w := &workv1.ManifestWork{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "cluster2", Name: name}, w))
		return w
	}
	gone := func(name string) func() bool {
		return func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: "cluster2", Name: name}, &workv1.ManifestWork{}))
		}
	}
	setAvailable := func(status metav1.ConditionStatus) {
		mc := &clusterv1.ManagedCluster{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "cluster2"}, mc))
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: status,
			Reason: "Test", Message: "set by the test"})
		require.NoError(t, c.Status().Update(ctx, mc))
	}

	require.NoError(t, c.Create(ctx, mw("cluster2", "plain", cm("app", "a", 1))))
	assert.Equal(t, []string{workv1.ManifestWorkFinalizer}, get("plain").Finalizers)
	with := mw("cluster2", "others", cm("app", "a", 1))
	with.Finalizers = []string{"example.com/keep", workv1.ManifestWorkFinalizer}
	require.NoError(t, c.Create(ctx, with))
	assert.Equal(t, []string{"example.com/keep", workv1.ManifestWorkFinalizer}, get("others").Finalizers, "not added twice")
	with = mw("cluster2", "other", cm("app", "a", 1))
	with.Finalizers = []string{"example.com/keep"}
	require.NoError(t, c.Create(ctx, with))
	assert.Equal(t, []string{"example.com/keep", workv1.ManifestWorkFinalizer}, get("other").Finalizers, "added after the others")

	t.Run("a cluster never available: deleted at once", func(t *testing.T) {
		require.NoError(t, c.Delete(ctx, get("plain")))
		require.Eventually(t, gone("plain"), 30*time.Second, 100*time.Millisecond)
	})
	t.Run("an available cluster's agent lets go, even once the cluster is lost; a work made while it is lost goes at once", func(t *testing.T) {
		setAvailable(metav1.ConditionTrue)
		require.NoError(t, c.Create(ctx, mw("cluster2", "waits", cm("app", "a", 1))))
		require.NoError(t, c.Delete(ctx, get("waits")))
		// The hub leaves it to the agent: the work stays while the cluster is
		// Available (checked after the hub has seen the deletion of another
		// work it releases: a work in a namespace of no cluster).
		require.NoError(t, c.Create(ctx, mw("not-a-cluster", "probe", cm("app", "a", 1))))
		require.NoError(t, c.Delete(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "not-a-cluster", Name: "probe"}}))
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: "not-a-cluster", Name: "probe"}, &workv1.ManifestWork{}))
		}, 30*time.Second, 100*time.Millisecond, "a work of no cluster is let go")
		assert.Contains(t, get("waits").Finalizers, workv1.ManifestWorkFinalizer, "kept for the agent")
		// The cluster's condition changes a second after the work's creation
		// at the earliest (both are second-precise).
		require.Eventually(t, func() bool { return time.Since(get("waits").CreationTimestamp.Time) > time.Second }, 5*time.Second, 100*time.Millisecond)
		setAvailable(metav1.ConditionUnknown)
		require.NoError(t, c.Create(ctx, mw("not-a-cluster", "probe2", cm("app", "a", 1))))
		require.NoError(t, c.Delete(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "not-a-cluster", Name: "probe2"}}))
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: "not-a-cluster", Name: "probe2"}, &workv1.ManifestWork{}))
		}, 30*time.Second, 100*time.Millisecond)
		assert.Contains(t, get("waits").Finalizers, workv1.ManifestWorkFinalizer, "lost after the work was made: its agent may have applied it")
		w := get("waits")
		w.Finalizers = nil
		require.NoError(t, c.Update(ctx, w))

		require.NoError(t, c.Create(ctx, mw("cluster2", "late", cm("app", "a", 1))))
		require.NoError(t, c.Delete(ctx, get("late")))
		require.Eventually(t, gone("late"), 30*time.Second, 100*time.Millisecond, "made while the cluster is lost: released")
	})
	t.Run("a work its agent reported on keeps the finalizer", func(t *testing.T) {
		w := get("other")
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue,
			Reason: "AppliedManifestWorkComplete", Message: "applied", ObservedGeneration: 1})
		require.NoError(t, c.Status().Update(ctx, w))
		require.NoError(t, c.Delete(ctx, get("other")))
		require.NoError(t, c.Delete(ctx, get("others")))
		require.NoError(t, c.Create(ctx, mw("not-a-cluster", "probe3", cm("app", "a", 1))))
		require.NoError(t, c.Delete(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "not-a-cluster", Name: "probe3"}}))
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: "not-a-cluster", Name: "probe3"}, &workv1.ManifestWork{}))
		}, 30*time.Second, 100*time.Millisecond)
		assert.True(t, controllerHolds(get("other")), "the agent's to clean up")
		for _, name := range []string{"other", "others"} {
			w := get(name)
			w.Finalizers = nil
			require.NoError(t, c.Update(ctx, w))
		}
	})
}

// controllerHolds says the work still holds the agent's finalizer.
func controllerHolds(w *workv1.ManifestWork) bool {
	for _, f := range w.Finalizers {
		if f == workv1.ManifestWorkFinalizer {
			return true
		}
	}
	return false
}
