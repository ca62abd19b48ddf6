package work_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/test/testenv"
)

// A ManifestWork that no Go client can decode (its status holds an ordinal
// beyond int32) does not stop the agent: other works are applied, and what the
// bad work applied is not evicted as if the work were gone.
func TestUndecodableWorkHarmsOnlyItself(t *testing.T) {
	ctx := context.Background()
	newWork(t, "cluster1", "turns-bad", namespace("undecodable"), configMap("undecodable", "kept", nil)).create(t)
	waitApplied(t, "cluster1", "turns-bad")

	testenv.WithoutAdmissionPolicies(t, env.Hub)
	bad := &unstructured.Unstructured{}
	bad.SetAPIVersion("work.open-cluster-management.io/v1")
	bad.SetKind("ManifestWork")
	bad.SetNamespace("cluster1")
	bad.SetName("turns-bad")
	require.Eventually(t, func() bool {
		return hub.Status().Patch(ctx, bad, client.RawPatch(types.MergePatchType,
			[]byte(`{"status":{"resourceStatus":{"manifests":[{"resourceMeta":{"ordinal":2147483648},"conditions":[]}]}}}`))) == nil
	}, wait, tick)

	newWork(t, "cluster1", "beside-bad", configMap("undecodable", "beside", nil)).create(t)
	waitApplied(t, "cluster1", "beside-bad")

	// Eviction grace here is 2s: well past it, the bad work's ConfigMap stays.
	require.Never(t, func() bool {
		_, err := getCM(t, "undecodable", "kept")
		return apierrors.IsNotFound(err)
	}, 4*evictGrace, 200*time.Millisecond, "the resources of a work the agent cannot decode were evicted")

	// Fixed, the work is seen again (and only then can the agent finalize its
	// deletion: a work it cannot decode keeps its finalizer).
	require.NoError(t, hub.Status().Patch(ctx, bad, client.RawPatch(types.MergePatchType,
		[]byte(`{"status":{"resourceStatus":{"manifests":[]}}}`))))
	waitApplied(t, "cluster1", "turns-bad")
	eventuallyWork(t, "cluster1", "turns-bad", func(w *workv1.ManifestWork) bool {
		return len(w.Status.ResourceStatus.Manifests) == 2
	}, "the agent reports the fixed work again")
	deleteWork(t, "cluster1", "beside-bad")
	deleteWork(t, "cluster1", "turns-bad")
}
