package work_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
)

func cmID(ns, name string) workv1.ResourceIdentifier {
	return workv1.ResourceIdentifier{Resource: "configmaps", Namespace: ns, Name: name}
}

func strategy(id workv1.ResourceIdentifier, s workv1.UpdateStrategy) workv1.ManifestConfigOption {
	return workv1.ManifestConfigOption{ResourceIdentifier: id, UpdateStrategy: &s}
}

func TestCreateOnly(t *testing.T) {
	ctx := context.Background()
	newWork(t, "cluster1", "createonly", namespace("createonly"),
		configMap("createonly", "c", map[string]interface{}{"k": "1"})).
		config(strategy(cmID("createonly", "c"), workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeCreateOnly})).
		create(t)
	waitApplied(t, "cluster1", "createonly")

	// Edits on the managed cluster stay.
	cm, err := getCM(t, "createonly", "c")
	require.NoError(t, err)
	cm.Data["k"] = "edited"
	_, err = spoke1.CoreV1().ConfigMaps("createonly").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	// So do changes to the manifest.
	w := getWork(t, "cluster1", "createonly")
	w.Spec.Workload.Manifests[1] = manifest(t, configMap("createonly", "c", map[string]interface{}{"k": "2"}))
	require.NoError(t, hub.Update(ctx, w))
	w = waitApplied(t, "cluster1", "createonly")
	// A full resync later the object is still as edited.
	waitResyncs(t, "cluster1", "createonly", 2)
	cm, err = getCM(t, "createonly", "c")
	require.NoError(t, err)
	assert.Equal(t, "edited", cm.Data["k"])
	deleteWork(t, "cluster1", "createonly")
}

// waitResyncs proves the agent made n full passes over the work after this
// moment: each time, it deletes a probe configmap of the work on the managed
// cluster and waits for the agent to put it back.
func waitResyncs(t *testing.T, cluster, work string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		probe := "probe-" + work
		ctx := context.Background()
		w := getWork(t, cluster, work)
		has := false
		for _, m := range w.Status.ResourceStatus.Manifests {
			if m.ResourceMeta.Name == probe {
				has = true
			}
		}
		if !has {
			w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, manifest(t, configMap(work, probe, nil)))
			require.NoError(t, hub.Update(ctx, w))
			eventuallyCM(t, work, probe, func(_ *corev1.ConfigMap, err error) bool { return err == nil }, "probe should appear")
		}
		require.NoError(t, spoke1.CoreV1().ConfigMaps(work).Delete(ctx, probe, metav1.DeleteOptions{}))
		eventuallyCM(t, work, probe, func(_ *corev1.ConfigMap, err error) bool { return err == nil }, "probe should be repaired")
	}
}

func TestServerSideApply(t *testing.T) {
	ctx := context.Background()
	newWork(t, "cluster1", "ssa", namespace("ssa"),
		configMap("ssa", "default-manager", map[string]interface{}{"k": "1"}),
		configMap("ssa", "custom-manager", map[string]interface{}{"k": "1"})).
		config(strategy(cmID("ssa", "default-manager"), workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply,
			ServerSideApply: &workv1.ServerSideApplyConfig{Force: true}})).
		config(strategy(cmID("ssa", "custom-manager"), workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply,
			ServerSideApply: &workv1.ServerSideApplyConfig{Force: true, FieldManager: "work-agent-custom"}})).
		create(t)
	waitApplied(t, "cluster1", "ssa")

	managers := func(name string) map[string]bool {
		cm, err := getCM(t, "ssa", name)
		require.NoError(t, err)
		out := map[string]bool{}
		for _, mf := range cm.ManagedFields {
			if mf.Operation == metav1.ManagedFieldsOperationApply {
				out[mf.Manager] = true
			}
		}
		return out
	}
	assert.True(t, managers("default-manager")["work-agent"], "default field manager is work-agent")
	assert.True(t, managers("custom-manager")["work-agent-custom"])

	// Another manager adds its own key: it is kept. Another manager takes our
	// key: with force, ours wins back.
	other := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"default-manager","namespace":"ssa"},"data":{"theirs":"x","k":"stolen"}}`)
	_, err := spoke1.CoreV1().ConfigMaps("ssa").Patch(ctx, "default-manager", types.ApplyPatchType, other,
		metav1.PatchOptions{FieldManager: "someone-else", Force: ptr.To(true)})
	require.NoError(t, err)
	eventuallyCM(t, "ssa", "default-manager", func(cm *corev1.ConfigMap, err error) bool {
		return err == nil && cm.Data["k"] == "1" && cm.Data["theirs"] == "x"
	}, "our field restored, theirs kept")
	deleteWork(t, "cluster1", "ssa")
}

func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	_, err := spoke1.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "readonly"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = spoke1.CoreV1().ConfigMaps("readonly").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "existing", Namespace: "readonly"}, Data: map[string]string{"color": "blue"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	ro := strategy(cmID("readonly", "existing"), workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly})
	ro.FeedbackRules = []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "color", Path: ".data.color"}}}}
	missing := strategy(cmID("readonly", "absent"), workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly})
	newWork(t, "cluster1", "readonly",
		configMap("readonly", "existing", map[string]interface{}{"color": "red"}),
		configMap("readonly", "absent", nil)).config(ro).config(missing).create(t)

	w := eventuallyWork(t, "cluster1", "readonly", func(w *workv1.ManifestWork) bool {
		c := manifestCond(w, 0, "StatusFeedbackSynced")
		return c != nil && c.Status == "True"
	}, "feedback from the read-only object")
	vals := w.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values
	require.Len(t, vals, 1)
	assert.Equal(t, "blue", *vals[0].Value.String)
	assert.Equal(t, metav1.ConditionFalse, manifestCond(w, 1, "Available").Status, "a read-only object that does not exist is not available")
	assert.Equal(t, metav1.ConditionTrue, manifestCond(w, 1, "Applied").Status)

	cm, err := getCM(t, "readonly", "existing")
	require.NoError(t, err)
	assert.Equal(t, "blue", cm.Data["color"], "read-only never writes")
	assert.Empty(t, cm.OwnerReferences)
	_, err = getCM(t, "readonly", "absent")
	assert.True(t, apierrors.IsNotFound(err), "read-only never creates")
	amw, err := appliedWork(t, spoke1c, "readonly")
	require.NoError(t, err)
	assert.Empty(t, amw.Status.AppliedResources, "read-only resources are not owned")

	deleteWork(t, "cluster1", "readonly")
	_, err = getCM(t, "readonly", "existing")
	assert.NoError(t, err, "deleting the work leaves read-only objects alone")
}

func TestOrphan(t *testing.T) {
	newWork(t, "cluster1", "orphan", namespace("orphan"), configMap("orphan", "keep", map[string]interface{}{"k": "1"})).
		deleteOption(&workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}).create(t)
	waitApplied(t, "cluster1", "orphan")
	deleteWork(t, "cluster1", "orphan")
	cm, err := getCM(t, "orphan", "keep")
	require.NoError(t, err, "orphaned configmap stays")
	assert.Empty(t, cm.OwnerReferences, "and no longer points at the deleted record")
	_, err = spoke1.CoreV1().Namespaces().Get(context.Background(), "orphan", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = appliedWork(t, spoke1c, "orphan")
	assert.True(t, apierrors.IsNotFound(err))
}

func TestSelectivelyOrphan(t *testing.T) {
	newWork(t, "cluster1", "selective", namespace("selective"),
		configMap("selective", "keep", nil), configMap("selective", "drop", nil)).
		deleteOption(&workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
			SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: []workv1.OrphaningRule{
				{Resource: "configmaps", Namespace: "selective", Name: "keep"},
				{Resource: "namespaces", Name: "selective"},
			}}}).create(t)
	waitApplied(t, "cluster1", "selective")
	deleteWork(t, "cluster1", "selective")
	_, err := getCM(t, "selective", "keep")
	assert.NoError(t, err, "matching an orphaning rule: kept")
	_, err = getCM(t, "selective", "drop")
	assert.True(t, apierrors.IsNotFound(err), "not matching: deleted, got %v", err)
}

func TestResourceSharedByTwoWorksSurvivesRemovalFromOne(t *testing.T) {
	ctx := context.Background()
	newWork(t, "cluster1", "share-a", namespace("share"), configMap("share", "shared", map[string]interface{}{"k": "1"})).create(t)
	newWork(t, "cluster1", "share-b", configMap("share", "shared", map[string]interface{}{"k": "1"})).create(t)
	waitApplied(t, "cluster1", "share-a")
	waitApplied(t, "cluster1", "share-b")
	eventuallyCM(t, "share", "shared", func(cm *corev1.ConfigMap, err error) bool { return err == nil && len(cm.OwnerReferences) == 2 },
		"both records own the configmap")

	w := getWork(t, "cluster1", "share-a")
	w.Spec.Workload.Manifests = w.Spec.Workload.Manifests[:1]
	require.NoError(t, hub.Update(ctx, w))
	amwB, err := appliedWork(t, spoke1c, "share-b")
	require.NoError(t, err)
	eventuallyCM(t, "share", "shared", func(cm *corev1.ConfigMap, err error) bool {
		return err == nil && len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].UID == amwB.UID
	}, "only share-b owns it now")
	deleteWork(t, "cluster1", "share-b")
	eventuallyCM(t, "share", "shared", func(_ *corev1.ConfigMap, err error) bool { return apierrors.IsNotFound(err) }, "deleted with its last owner")
	deleteWork(t, "cluster1", "share-a")
}
