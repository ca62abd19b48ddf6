package work_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

func TestCreateUpdateRemoveDelete(t *testing.T) {
	ctx := context.Background()
	newWork(t, "cluster1", "flow",
		configMap("flow", "a", map[string]interface{}{"k": "1"}), // before its namespace: applied after it
		namespace("flow"),
		configMap("flow", "b", map[string]interface{}{"k": "1"}),
	).create(t)

	w := waitApplied(t, "cluster1", "flow")
	assert.True(t, controllerutil.ContainsFinalizer(w, workv1.ManifestWorkFinalizer))
	w = eventuallyWork(t, "cluster1", "flow", func(w *workv1.ManifestWork) bool { return condIs(w.Status.Conditions, "Available", "True") }, "available")
	require.Len(t, w.Status.ResourceStatus.Manifests, 3)
	m0 := w.Status.ResourceStatus.Manifests[0].ResourceMeta
	assert.Equal(t, workv1.ManifestResourceMeta{Ordinal: 0, Group: "", Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Name: "a", Namespace: "flow"}, m0)
	assert.Equal(t, "namespaces", w.Status.ResourceStatus.Manifests[1].ResourceMeta.Resource)
	for i := range w.Status.ResourceStatus.Manifests {
		assert.Equal(t, "AppliedManifestComplete", manifestCond(w, i, "Applied").Reason)
		assert.Equal(t, "ResourceAvailable", manifestCond(w, i, "Available").Reason)
	}

	cmA, err := getCM(t, "flow", "a")
	require.NoError(t, err)
	assert.Equal(t, "1", cmA.Data["k"])
	amw := recordedWork(t, spoke1c, "flow", 3)
	assert.Equal(t, workv1.AppliedManifestWorkSpec{HubHash: hubHash, AgentID: "cluster1", ManifestWorkName: "flow"}, amw.Spec)
	assert.Contains(t, amw.Finalizers, workv1.AppliedManifestWorkFinalizer)
	require.Len(t, amw.Status.AppliedResources, 3)
	uids := map[string]string{}
	for _, r := range amw.Status.AppliedResources {
		uids[r.Resource+"/"+r.Name] = r.UID
	}
	assert.Equal(t, string(cmA.UID), uids["configmaps/a"])
	require.Len(t, cmA.OwnerReferences, 1)
	assert.Equal(t, amw.UID, cmA.OwnerReferences[0].UID)

	// Update a manifest.
	w = getWork(t, "cluster1", "flow")
	w.Spec.Workload.Manifests[0] = manifest(t, configMap("flow", "a", map[string]interface{}{"k": "2"}))
	require.NoError(t, hub.Update(ctx, w))
	eventuallyCM(t, "flow", "a", func(cm *corev1.ConfigMap, err error) bool { return err == nil && cm.Data["k"] == "2" }, "a should be updated")
	waitApplied(t, "cluster1", "flow")

	// Remove a manifest: its resource goes from the cluster and the record.
	w = getWork(t, "cluster1", "flow")
	w.Spec.Workload.Manifests = w.Spec.Workload.Manifests[:2]
	require.NoError(t, hub.Update(ctx, w))
	eventuallyCM(t, "flow", "b", func(_ *corev1.ConfigMap, err error) bool { return apierrors.IsNotFound(err) }, "b should be deleted")
	require.Eventually(t, func() bool {
		amw, err := appliedWork(t, spoke1c, "flow")
		return err == nil && len(amw.Status.AppliedResources) == 2
	}, wait, tick)
	w = waitApplied(t, "cluster1", "flow")
	assert.Len(t, w.Status.ResourceStatus.Manifests, 2)

	// Delete the work: resources, record and finalizer go.
	deleteWork(t, "cluster1", "flow")
	eventuallyCM(t, "flow", "a", func(_ *corev1.ConfigMap, err error) bool { return apierrors.IsNotFound(err) }, "a should be deleted")
	ns, err := spoke1.CoreV1().Namespaces().Get(ctx, "flow", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err) || ns.DeletionTimestamp != nil, "namespace should be deleted")
	_, err = appliedWork(t, spoke1c, "flow")
	assert.True(t, apierrors.IsNotFound(err), "AppliedManifestWork should be gone: %v", err)
}
