package work_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/klusterlet/work/status"
)

func ensureSpokeNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := spoke1.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		require.Contains(t, err.Error(), "already exists")
	}
}

// conflictOf is the manifest's Conflict condition (nil when absent).
func conflictOf(w *workv1.ManifestWork, ordinal int) *metav1.Condition {
	return manifestCond(w, ordinal, status.ConditionConflict)
}

// current says the work's status was computed from its latest spec.
func current(w *workv1.ManifestWork) bool {
	c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	return c != nil && c.ObservedGeneration == w.Generation
}

// waitConflict waits until keeper reports that its manifest 0 is also in
// newcomer with other content, and newcomer that it does not apply it.
func waitConflict(t *testing.T, ns, keeper, newcomer string) {
	t.Helper()
	eventuallyWork(t, "cluster1", newcomer, func(w *workv1.ManifestWork) bool {
		a := manifestCond(w, 0, workv1.ManifestApplied)
		return current(w) && a != nil && a.Status == metav1.ConditionFalse && a.Reason == status.ReasonManifestConflict &&
			assert.ObjectsAreEqual("ConfigMap "+ns+"/shared is managed by ManifestWork cluster1/"+keeper+
				" with different content; this work leaves it unchanged until the conflict ends (make both manifests identical, or remove it from one of the works)", a.Message) &&
			conflictOf(w, 0) != nil && condIs(w.Status.Conditions, status.ConditionConflict, metav1.ConditionTrue)
	}, newcomer+" should report that "+keeper+" keeps the configmap")
	eventuallyWork(t, "cluster1", keeper, func(w *workv1.ManifestWork) bool {
		c := conflictOf(w, 0)
		return current(w) && condIs(w.Status.Conditions, workv1.WorkApplied, metav1.ConditionTrue) &&
			c != nil && c.Status == metav1.ConditionTrue && c.Reason == status.ReasonManifestConflict &&
			assert.Contains(t, c.Message, "ManifestWork cluster1/"+newcomer+" with different content") &&
			condIs(w.Status.Conditions, status.ConditionConflict, metav1.ConditionTrue)
	}, keeper+" should stay Applied and report the conflict with "+newcomer)
}

// bump changes the work's spec (an unrelated manifest added or replaced) and
// waits until the agent has reconciled that generation: a full pass.
func bump(t *testing.T, work, ns, value string) {
	t.Helper()
	w := getWork(t, "cluster1", work)
	extra := manifest(t, configMap(ns, "extra-"+work, map[string]interface{}{"v": value}))
	if len(w.Spec.Workload.Manifests) == 1 {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, extra)
	} else {
		w.Spec.Workload.Manifests[1] = extra
	}
	require.NoError(t, hub.Update(context.Background(), w))
	eventuallyWork(t, "cluster1", work, current, work+" should be reconciled after its update")
}

// TestConflictingWorksDoNotFight: two works carry one ConfigMap with
// different data. The first keeps it; the second does not write it and says
// so; both report the conflict; the object is not written again while passes
// go by; when the second work's content matches, both share it.
func TestConflictingWorksDoNotFight(t *testing.T) {
	ctx := context.Background()
	ensureSpokeNamespace(t, "clash")
	newWork(t, "cluster1", "clash-a", configMap("clash", "shared", map[string]interface{}{"v": "a"})).create(t)
	waitApplied(t, "cluster1", "clash-a")
	newWork(t, "cluster1", "clash-b", configMap("clash", "shared", map[string]interface{}{"v": "b"})).create(t)
	waitConflict(t, "clash", "clash-a", "clash-b")

	cm, err := getCM(t, "clash", "shared")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"v": "a"}, cm.Data, "the first work's content stays")
	amwA, err := appliedWork(t, spoke1c, "clash-a")
	require.NoError(t, err)
	require.Len(t, cm.OwnerReferences, 1)
	assert.Equal(t, amwA.UID, cm.OwnerReferences[0].UID, "the second work did not take a share")

	// No write loop: from this resourceVersion on, nothing writes the
	// object while both works are reconciled again (twice each).
	path := "/api/v1/namespaces/clash/configmaps/shared"
	writes := agentWrites.count(path)
	wt, err := spoke1.CoreV1().ConfigMaps("clash").Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=shared", ResourceVersion: cm.ResourceVersion})
	require.NoError(t, err)
	defer wt.Stop()
	for _, v := range []string{"1", "2"} {
		bump(t, "clash-a", "clash", v)
		bump(t, "clash-b", "clash", v)
	}
	waitConflict(t, "clash", "clash-a", "clash-b")
	after, err := getCM(t, "clash", "shared")
	require.NoError(t, err)
	assert.Equal(t, cm.ResourceVersion, after.ResourceVersion, "the object was written while in conflict")
	assert.Equal(t, writes, agentWrites.count(path), "the agent sent writes for the object while in conflict")
	select {
	case ev := <-wt.ResultChan():
		if ev.Type != watch.Bookmark {
			t.Fatalf("the object changed while in conflict: %s", ev.Type)
		}
	default:
	}

	// The second work changes its content to match: shared, no conflict.
	setManifest(t, "cluster1", "clash-b", 0, configMap("clash", "shared", map[string]interface{}{"v": "a"}))
	for _, name := range []string{"clash-a", "clash-b"} {
		eventuallyWork(t, "cluster1", name, func(w *workv1.ManifestWork) bool {
			return applied_(w) && conflictOf(w, 0) == nil && meta.FindStatusCondition(w.Status.Conditions, status.ConditionConflict) == nil
		}, name+" should be Applied without a conflict")
	}
	eventuallyCM(t, "clash", "shared", func(cm *corev1.ConfigMap, err error) bool {
		return err == nil && len(cm.OwnerReferences) == 2 && cm.Data["v"] == "a"
	}, "both works own the configmap")
	deleteWork(t, "cluster1", "clash-a")
	deleteWork(t, "cluster1", "clash-b")
}

// TestConflictEndsWhenTheKeeperIsDeleted: the waiting work takes the object
// over (same object, not deleted and re-created) and applies its content.
func TestConflictEndsWhenTheKeeperIsDeleted(t *testing.T) {
	ensureSpokeNamespace(t, "clash-del")
	newWork(t, "cluster1", "keep-a", configMap("clash-del", "shared", map[string]interface{}{"v": "a"})).create(t)
	waitApplied(t, "cluster1", "keep-a")
	newWork(t, "cluster1", "keep-b", configMap("clash-del", "shared", map[string]interface{}{"v": "b"})).create(t)
	waitConflict(t, "clash-del", "keep-a", "keep-b")
	before, err := getCM(t, "clash-del", "shared")
	require.NoError(t, err)

	deleteWork(t, "cluster1", "keep-a")
	w := waitApplied(t, "cluster1", "keep-b")
	w = eventuallyWork(t, "cluster1", "keep-b", func(w *workv1.ManifestWork) bool {
		return applied_(w) && conflictOf(w, 0) == nil
	}, "keep-b should apply without a conflict")
	assert.Nil(t, meta.FindStatusCondition(w.Status.Conditions, status.ConditionConflict))
	amwB, err := appliedWork(t, spoke1c, "keep-b")
	require.NoError(t, err)
	eventuallyCM(t, "clash-del", "shared", func(cm *corev1.ConfigMap, err error) bool {
		return err == nil && cm.Data["v"] == "b" && len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].UID == amwB.UID
	}, "keep-b's content, owned by keep-b")
	after, err := getCM(t, "clash-del", "shared")
	require.NoError(t, err)
	assert.Equal(t, before.UID, after.UID, "the object was handed over, not deleted and re-created")
	deleteWork(t, "cluster1", "keep-b")
}

// TestConflictEndsWhenTheKeeperDropsTheManifest: the keeper lets go of the
// object and the other work applies its content.
func TestConflictEndsWhenTheKeeperDropsTheManifest(t *testing.T) {
	ensureSpokeNamespace(t, "clash-drop")
	newWork(t, "cluster1", "drop-a", configMap("clash-drop", "shared", map[string]interface{}{"v": "a"}),
		configMap("clash-drop", "other", nil)).create(t)
	waitApplied(t, "cluster1", "drop-a")
	newWork(t, "cluster1", "drop-b", configMap("clash-drop", "shared", map[string]interface{}{"v": "b"})).create(t)
	waitConflict(t, "clash-drop", "drop-a", "drop-b")

	w := getWork(t, "cluster1", "drop-a")
	w.Spec.Workload.Manifests = w.Spec.Workload.Manifests[1:]
	require.NoError(t, hub.Update(context.Background(), w))
	eventuallyWork(t, "cluster1", "drop-b", func(w *workv1.ManifestWork) bool {
		return applied_(w) && conflictOf(w, 0) == nil
	}, "drop-b should apply once drop-a let go")
	eventuallyCM(t, "clash-drop", "shared", func(cm *corev1.ConfigMap, err error) bool {
		return err == nil && cm.Data["v"] == "b" && len(cm.OwnerReferences) == 1
	}, "drop-b's content")
	eventuallyWork(t, "cluster1", "drop-a", func(w *workv1.ManifestWork) bool {
		return applied_(w) && meta.FindStatusCondition(w.Status.Conditions, status.ConditionConflict) == nil
	}, "drop-a no longer reports a conflict")
	deleteWork(t, "cluster1", "drop-a")
	deleteWork(t, "cluster1", "drop-b")
}

// TestIdenticalContentIsShared: two works with the same ConfigMap both apply
// it without a conflict; deleting one leaves the object, owned by the other.
func TestIdenticalContentIsShared(t *testing.T) {
	ensureSpokeNamespace(t, "same")
	data := map[string]interface{}{"v": "same"}
	newWork(t, "cluster1", "same-a", configMap("same", "shared", data)).create(t)
	newWork(t, "cluster1", "same-b", configMap("same", "shared", data)).create(t)
	for _, name := range []string{"same-a", "same-b"} {
		w := waitApplied(t, "cluster1", name)
		assert.Nil(t, conflictOf(w, 0), name)
		assert.Nil(t, meta.FindStatusCondition(w.Status.Conditions, status.ConditionConflict), name)
	}
	eventuallyCM(t, "same", "shared", func(cm *corev1.ConfigMap, err error) bool { return err == nil && len(cm.OwnerReferences) == 2 },
		"both works own the configmap")
	before, err := getCM(t, "same", "shared")
	require.NoError(t, err)
	amwB, err := appliedWork(t, spoke1c, "same-b")
	require.NoError(t, err)

	deleteWork(t, "cluster1", "same-a")
	cm, err := getCM(t, "same", "shared")
	require.NoError(t, err, "the object stays while another work owns it")
	assert.Equal(t, before.UID, cm.UID)
	assert.Equal(t, []types.UID{amwB.UID}, []types.UID{cm.OwnerReferences[0].UID})
	assert.Len(t, cm.OwnerReferences, 1)
	waitApplied(t, "cluster1", "same-b")
	deleteWork(t, "cluster1", "same-b")
}

// TestServerSideApplyNewcomerDoesNotOverwrite: the guard holds for the
// ServerSideApply strategy too.
func TestServerSideApplyNewcomerDoesNotOverwrite(t *testing.T) {
	ensureSpokeNamespace(t, "clash-ssa")
	newWork(t, "cluster1", "ssa-a", configMap("clash-ssa", "shared", map[string]interface{}{"v": "a"})).create(t)
	waitApplied(t, "cluster1", "ssa-a")
	newWork(t, "cluster1", "ssa-b", configMap("clash-ssa", "shared", map[string]interface{}{"v": "b"})).
		config(strategy(cmID("clash-ssa", "shared"), workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply,
			ServerSideApply: &workv1.ServerSideApplyConfig{Force: true}})).create(t)
	waitConflict(t, "clash-ssa", "ssa-a", "ssa-b")
	cm, err := getCM(t, "clash-ssa", "shared")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"v": "a"}, cm.Data)
	assert.Len(t, cm.OwnerReferences, 1)
	deleteWork(t, "cluster1", "ssa-b")
	deleteWork(t, "cluster1", "ssa-a")
}
