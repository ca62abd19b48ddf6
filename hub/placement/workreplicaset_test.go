package placement_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
	"flotilla.dev/flotilla/internal/scheme"
)

func configMapManifest(name string) workv1.Manifest {
	return workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(fmt.Sprintf(
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default"},"data":{"k":"v"}}`, name))}}
}

// workClusters lists the clusters that have a work of the replica set.
func (s *scope) workClusters(mwrs string) []string {
	var list workv1.ManifestWorkList
	if err := hub.List(s.ctx, &list, client.MatchingLabels{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: s.ns + "." + mwrs}); err != nil {
		return nil
	}
	out := []string{}
	for _, w := range list.Items {
		if w.DeletionTimestamp == nil {
			out = append(out, w.Namespace)
		}
	}
	return out
}

// reportWork plays the work agent: it sets Applied/Available on the cluster's work.
func (s *scope) reportWork(cluster, name string, ok bool) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		var w workv1.ManifestWork
		if err := hub.Get(s.ctx, client.ObjectKey{Namespace: cluster, Name: name}, &w); err != nil {
			return false
		}
		status := metav1.ConditionTrue
		if !ok {
			status = metav1.ConditionFalse
		}
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: status, Reason: "Test", ObservedGeneration: w.Generation})
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkAvailable, Status: status, Reason: "Test", ObservedGeneration: w.Generation})
		return hub.Status().Update(s.ctx, &w) == nil
	}, timeout, tick)
}

func (s *scope) mwrsStatus(name string) workv1alpha1.ManifestWorkReplicaSetStatus {
	var m workv1alpha1.ManifestWorkReplicaSet
	_ = hub.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &m)
	return m.Status
}

func TestManifestWorkReplicaSetProgressiveRollout(t *testing.T) {
	s := newScope(t, "mwrs")
	var names []string
	for i := 1; i <= 4; i++ {
		name := fmt.Sprintf("mwrs-%d", i)
		names = append(names, name)
		require.NoError(t, hub.Create(s.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
		s.cluster(name, nil)
	}
	s.placement(st.Placement("all", "").Obj())
	s.eventuallyDecided("all", names...)

	mwrs := &workv1alpha1.ManifestWorkReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: s.ns},
		Spec: workv1alpha1.ManifestWorkReplicaSetSpec{
			ManifestWorkTemplate: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{configMapManifest("app")}}},
			PlacementRefs: []workv1alpha1.LocalPlacementReference{{Name: "all", RolloutStrategy: clusterv1alpha1.RolloutStrategy{
				Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intstr.FromInt32(2)}}}},
		},
	}
	require.NoError(t, hub.Create(s.ctx, mwrs))

	// Two at a time: the first two clusters get the work, and the status says so.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := s.mwrsStatus("app")
		assert.Equal(c, 2, st.Summary.Total)
		assert.Equal(c, 4, st.Summary.DesiredTotal)
		rolled := meta.FindStatusCondition(st.Conditions, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)
		if assert.NotNil(c, rolled) {
			assert.Equal(c, workv1alpha1.ReasonProgressing, rolled.Reason)
		}
	}, timeout, tick)
	assert.ElementsMatch(t, []string{"mwrs-1", "mwrs-2"}, s.workClusters("app"))

	// Generated works carry OCM's labels and the template.
	var w workv1.ManifestWork
	require.NoError(t, hub.Get(s.ctx, client.ObjectKey{Namespace: "mwrs-1", Name: "app"}, &w))
	assert.Equal(t, "mwrs.app", w.Labels[workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey])
	assert.Equal(t, "all", w.Labels[workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey])
	assert.Len(t, w.Spec.Workload.Manifests, 1)

	// One succeeds: the next cluster starts, still at most two in flight.
	s.reportWork("mwrs-1", "app", true)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.ElementsMatch(c, []string{"mwrs-1", "mwrs-2", "mwrs-3"}, s.workClusters("app"))
		assert.Equal(c, 1, s.mwrsStatus("app").Summary.Available)
	}, timeout, tick)

	// One fails (maxFailures defaults to 0): the rollout stops, even when others succeed.
	s.reportWork("mwrs-2", "app", false)
	s.reportWork("mwrs-3", "app", true)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := s.mwrsStatus("app")
		assert.Equal(c, 2, st.Summary.Available)
		rolled := meta.FindStatusCondition(st.Conditions, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)
		if assert.NotNil(c, rolled) {
			assert.Contains(c, rolled.Message, "rollout stopped")
		}
		applied := meta.FindStatusCondition(st.Conditions, workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied)
		if assert.NotNil(c, applied) {
			assert.Equal(c, workv1alpha1.ReasonNotAsExpected, applied.Reason)
		}
	}, timeout, tick)
	assert.ElementsMatch(t, []string{"mwrs-1", "mwrs-2", "mwrs-3"}, s.workClusters("app"), "mwrs-4 must not get the work after a failure")

	// A cluster that leaves the placement loses its work.
	s.patchCluster("mwrs-1", func(c *clusterv1.ManagedCluster) { c.Labels[clusterv1beta2.ClusterSetLabel] = "elsewhere" }, false)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.ElementsMatch(c, []string{"mwrs-2", "mwrs-3"}, s.workClusters("app"))
	}, timeout, tick)

	// Deleting the replica set removes its works first (Foreground by default).
	require.NoError(t, hub.Delete(s.ctx, mwrs))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var list workv1.ManifestWorkList
		assert.NoError(c, hub.List(s.ctx, &list, client.MatchingLabels{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: "mwrs.app"}))
		assert.Empty(c, list.Items)
		err := hub.Get(s.ctx, client.ObjectKeyFromObject(mwrs), &workv1alpha1.ManifestWorkReplicaSet{})
		assert.True(c, client.IgnoreNotFound(err) == nil && err != nil, "replica set gone")
	}, timeout, tick)
}

func TestManifestWorkReplicaSetAllAndMissingPlacement(t *testing.T) {
	s := newScope(t, "mwrsall")
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("mwrsall-%d", i)
		require.NoError(t, hub.Create(s.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
		s.cluster(name, nil)
	}
	mwrs := &workv1alpha1.ManifestWorkReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: s.ns},
		Spec: workv1alpha1.ManifestWorkReplicaSetSpec{
			ManifestWorkTemplate: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{configMapManifest("x")}}},
			PlacementRefs:        []workv1alpha1.LocalPlacementReference{{Name: "later", RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}}},
		},
	}
	require.NoError(t, hub.Create(s.ctx, mwrs))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		v := meta.FindStatusCondition(s.mwrsStatus("app").Conditions, workv1alpha1.ManifestWorkReplicaSetConditionPlacementVerified)
		if assert.NotNil(c, v) {
			assert.Equal(c, workv1alpha1.ReasonPlacementDecisionNotFound, v.Reason)
		}
	}, timeout, tick)

	s.placement(st.Placement("later", "").Obj())
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.ElementsMatch(c, []string{"mwrsall-1", "mwrsall-2", "mwrsall-3"}, s.workClusters("app"))
	}, timeout, tick)
	for i := 1; i <= 3; i++ {
		s.reportWork(fmt.Sprintf("mwrsall-%d", i), "app", true)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := s.mwrsStatus("app")
		for _, typ := range []string{workv1alpha1.ManifestWorkReplicaSetConditionPlacementVerified,
			workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied} {
			assert.True(c, meta.IsStatusConditionTrue(st.Conditions, typ), typ)
		}
		assert.Equal(c, 3, st.Summary.Updated)
		if assert.Len(c, st.PlacementsSummary, 1) {
			assert.Equal(c, "1/1", st.PlacementsSummary[0].AvailableDecisionGroups)
		}
	}, timeout, tick)

	// A template change rolls out again to every cluster.
	require.Eventually(t, func() bool {
		var m workv1alpha1.ManifestWorkReplicaSet
		if hub.Get(s.ctx, client.ObjectKeyFromObject(mwrs), &m) != nil {
			return false
		}
		m.Spec.ManifestWorkTemplate.Workload.Manifests = []workv1.Manifest{configMapManifest("y")}
		return hub.Update(s.ctx, &m) == nil
	}, timeout, tick)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var w workv1.ManifestWork
		assert.NoError(c, hub.Get(s.ctx, client.ObjectKey{Namespace: "mwrsall-2", Name: "app"}, &w))
		assert.Contains(c, string(w.Spec.Workload.Manifests[0].Raw), `"name":"y"`)
	}, timeout, tick)
}

// A Placement deleted (its decisions garbage collected with it) and created again
// never costs a cluster its work: the works are kept, PlacementVerified says why,
// and a watch on the works sees no deletion at any time.
func TestManifestWorkReplicaSetSurvivesPlacementDeletedAndRecreated(t *testing.T) {
	s := newScope(t, "mwrskeep")
	var names []string
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("mwrskeep-%d", i)
		names = append(names, name)
		require.NoError(t, hub.Create(s.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
		s.cluster(name, nil)
	}
	s.placement(st.Placement("all", "").Obj())
	s.eventuallyDecided("all", names...)
	require.NoError(t, hub.Create(s.ctx, &workv1alpha1.ManifestWorkReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: s.ns},
		Spec: workv1alpha1.ManifestWorkReplicaSetSpec{
			ManifestWorkTemplate: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{configMapManifest("keep")}}},
			PlacementRefs:        []workv1alpha1.LocalPlacementReference{{Name: "all"}},
		},
	}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.ElementsMatch(c, names, s.workClusters("app"))
	}, timeout, tick)

	// Watch the works from here on; any deletion is a failure.
	wc, err := client.NewWithWatch(hubConfig, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	w, err := wc.Watch(ctx, &workv1.ManifestWorkList{}, client.MatchingLabels{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: s.ns + ".app"})
	require.NoError(t, err)
	defer w.Stop()
	var mu sync.Mutex
	var deletions []string
	sawMarker := false
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for ev := range w.ResultChan() {
			mw, ok := ev.Object.(*workv1.ManifestWork)
			if !ok {
				continue
			}
			mu.Lock()
			if ev.Type == watch.Deleted || mw.DeletionTimestamp != nil {
				deletions = append(deletions, fmt.Sprintf("%s %s/%s", ev.Type, mw.Namespace, mw.Name))
			}
			if mw.Annotations["test.flotilla.dev/marker"] == "end" {
				sawMarker = true
			}
			mu.Unlock()
		}
	}()

	// Delete the Placement; its decisions go with it (owner references).
	p := s.getPlacement("all")
	require.NoError(t, hub.Delete(s.ctx, p))
	s.eventuallyDecided("all")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		v := meta.FindStatusCondition(s.mwrsStatus("app").Conditions, workv1alpha1.ManifestWorkReplicaSetConditionPlacementVerified)
		if assert.NotNil(c, v) {
			assert.Equal(c, metav1.ConditionFalse, v.Status)
			assert.Equal(c, workv1alpha1.ReasonPlacementDecisionNotFound, v.Reason)
			assert.Contains(c, v.Message, `Placement "all" not found in this namespace; its 3 ManifestWorks are kept`)
		}
	}, timeout, tick)
	assert.ElementsMatch(t, names, s.workClusters("app"))

	// Create it again: same decisions, verified again, the works never left.
	s.placement(st.Placement("all", "").Obj())
	s.eventuallyDecided("all", names...)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := s.mwrsStatus("app")
		assert.True(c, meta.IsStatusConditionTrue(st.Conditions, workv1alpha1.ManifestWorkReplicaSetConditionPlacementVerified))
		assert.Equal(c, 3, st.Summary.DesiredTotal)
		assert.Equal(c, 3, st.Summary.Total)
	}, timeout, tick)
	assert.ElementsMatch(t, names, s.workClusters("app"))

	// Drain the watch up to a write made after everything above, then judge.
	require.Eventually(t, func() bool {
		var marker workv1.ManifestWork
		if hub.Get(s.ctx, client.ObjectKey{Namespace: names[0], Name: "app"}, &marker) != nil {
			return false
		}
		metav1.SetMetaDataAnnotation(&marker.ObjectMeta, "test.flotilla.dev/marker", "end")
		return hub.Update(s.ctx, &marker) == nil
	}, timeout, tick)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return sawMarker
	}, timeout, tick, "the watch delivers the marker write")
	w.Stop()
	<-watchDone
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, deletions, "no work may be deleted while the Placement is gone or being recreated")
}
