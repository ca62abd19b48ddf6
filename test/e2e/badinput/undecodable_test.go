package badinput_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/manifests"
)

// undecodable are objects no Go client can decode: admitted only while the
// admission policies are switched off (one status write, ordinal 2^31, makes
// the ManifestWork undecodable). The ManifestWorkReplicaSet is refused even
// then: while the hub runs, its webhook refuses one it cannot decode, as it
// does a ManagedCluster (test/e2e/undecodable plants both before the hub
// starts).
const undecodable = ns + `---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: bad, namespace: $NS}
spec: {numberOfClusters: 2147483648}
---
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: bad, namespace: $NS}
spec:
  placementRefs: [{name: bad, rolloutStrategy: {type: All, all: {minSuccessTime: bogus}}}]
  manifestWorkTemplate:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: rs-$ROW, namespace: default}}
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata: {name: bad-$ROW}
spec:
  installStrategy: {type: Placements, placements: [{name: bad, namespace: $NS, rolloutStrategy: {type: All, all: {progressDeadline: 99999999999h}}}]}
---
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: bad-$ROW, namespace: $CLUSTER}
spec:
  workload:
    manifests:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: bad-$ROW, namespace: default}}
`

// withoutAdmission deletes the bindings of Flotilla's admission policies and
// waits until the apiserver stops enforcing them (probe is then admitted);
// the bindings are installed again by the returned function, and when t ends.
func withoutAdmission(t *testing.T, cs clients, probe *unstructured.Unstructured) (restore func()) {
	t.Helper()
	ctx := context.Background()
	restore = func() {
		require.NoError(t, manifests.InstallAdmission(ctx, env.Hub.Config, manifests.HubCRDs), "admission policies installed again")
	}
	t.Cleanup(restore)
	var bindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	require.NoError(t, cs.hub.List(ctx, &bindings))
	for _, b := range bindings.Items {
		if strings.HasPrefix(b.Name, "flotilla-") {
			require.NoError(t, client.IgnoreNotFound(cs.hub.Delete(ctx, &b)))
		}
	}
	eventually(t, func(c *assert.CollectT) {
		assert.NoError(c, cs.create(t, []*unstructured.Unstructured{probe}))
	}, "the admission policies are off: a bad %s is admitted", probe.GetKind())
	return restore
}

// testUndecodable plants objects no Go client can decode, one of each kind the
// hub reads, and checks that good objects of those kinds are still handled.
func testUndecodable(t *testing.T, cs clients) {
	const row = "undecodable"
	objs := decode(t, expand(undecodable, row))
	require.NoError(t, cs.create(t, objs[:1]))
	restore := withoutAdmission(t, cs, objs[1])
	err := cs.create(t, objs[2:3])
	require.Error(t, err, "the hub's webhook admits a ManifestWorkReplicaSet it cannot decode")
	assert.Contains(t, err.Error(), `cannot read the ManifestWorkReplicaSet: time: invalid duration "bogus"`)
	require.NoError(t, cs.create(t, objs[3:]))
	work := objs[len(objs)-1]
	require.NoError(t, cs.hub.Status().Patch(context.Background(), work.DeepCopy(), client.RawPatch(types.MergePatchType,
		[]byte(`{"status":{"resourceStatus":{"manifests":[{"resourceMeta":{"ordinal":2147483648},"conditions":[]}]}}}`))))
	// The work is made decodable again before it is deleted (last cleanup
	// first), so the agent can see its deletion and drop its finalizer.
	t.Cleanup(func() {
		_ = cs.hub.Status().Patch(context.Background(), work.DeepCopy(), client.RawPatch(types.MergePatchType,
			[]byte(`{"status":{"resourceStatus":{"manifests":[{"resourceMeta":{"ordinal":0},"conditions":[]}]}}}`)))
	})
	restore()

	for _, kind := range []string{"Placement", "ManagedCluster", "ManifestWork", "ManifestWorkReplicaSet"} {
		t.Run(kind, func(t *testing.T) { goodChecks[kind](t, cs, row+"-"+strings.ToLower(kind)) })
	}
}
