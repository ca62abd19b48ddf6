package badinput_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/internal/scheme"
)

// goodChecks, by the kind a row's bad input is of: each creates a good object
// of that kind (in its own namespace, named after the row) and waits until
// Flotilla has handled it.
var goodChecks = map[string]func(t *testing.T, cs clients, row string){
	"Placement":                goodPlacement,
	"ManagedCluster":           goodManagedCluster,
	"ManifestWork":             goodManifestWork,
	"ManifestWorkReplicaSet":   goodReplicaSet,
	"ManagedClusterSet":        goodClusterSet,
	"ManagedClusterSetBinding": goodClusterSet,
	"AddOnPlacementScore":      goodScore,
	"ClusterManagementAddOn":   goodAddOn("ClusterManagementAddOn", ""),
	"ManagedClusterAddOn":      goodAddOn("ManagedClusterAddOn", cluster),
	"AddOnDeploymentConfig":    goodAddOn("AddOnDeploymentConfig", "good-$ROW"),
	"ConfigurationPolicy":      goodPolicy,
}

// fixture renders a good object's YAML for row.
func fixture(t *testing.T, row, text string) []*unstructured.Unstructured {
	t.Helper()
	return decode(t, expand(text, row))
}

// tenant is a namespace bound to the global set, so its Placements may select
// the managed cluster.
const tenant = `
apiVersion: v1
kind: Namespace
metadata: {name: good-$ROW}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: global, namespace: good-$ROW}
spec: {clusterSet: global}
`

// placementFor selects the managed cluster (tolerating a lease that is late).
const placementFor = `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: good, namespace: good-$ROW}
spec:
  tolerations:
  - {key: cluster.open-cluster-management.io/unreachable, operator: Exists}
  - {key: cluster.open-cluster-management.io/unavailable, operator: Exists}
`

func decided(c *assert.CollectT, cs clients, ns, placement string) {
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Kind: "PlacementDecisionList"})
	require.NoError(c, cs.hub.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{"cluster.open-cluster-management.io/placement": placement}))
	var got []string
	for _, d := range list.Items {
		ds, _, _ := unstructured.NestedSlice(d.Object, "status", "decisions")
		for _, x := range ds {
			got = append(got, fmt.Sprint(x.(map[string]any)["clusterName"]))
		}
	}
	assert.Equal(c, []string{cluster}, got, "decisions of Placement %s/%s", ns, placement)
}

func goodPlacement(t *testing.T, cs clients, row string) {
	require.NoError(t, cs.create(t, fixture(t, row, tenant+"---"+placementFor)))
	eventually(t, func(c *assert.CollectT) { decided(c, cs, "good-"+row, "good") }, "a good Placement is scheduled")
}

func goodManagedCluster(t *testing.T, cs clients, row string) {
	objs := fixture(t, row, `
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: good-$ROW}
spec: {hubAcceptsClient: true, leaseDurationSeconds: 60}
`)
	require.NoError(t, cs.create(t, objs))
	eventually(t, func(c *assert.CollectT) {
		hasCondition(c, cs.get(c, objs[0]), "HubAcceptedManagedCluster", "True")
	}, "a good ManagedCluster's status is updated")
}

// spokeConfigMap asserts that ConfigMap default/name exists on the managed cluster.
func spokeConfigMap(c *assert.CollectT, cs clients, name string) {
	assert.NoError(c, cs.spoke.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &corev1.ConfigMap{}),
		"ConfigMap default/%s on the managed cluster", name)
}

func goodManifestWork(t *testing.T, cs clients, row string) {
	objs := fixture(t, row, `
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: good-$ROW, namespace: $CLUSTER}
spec:
  workload:
    manifests:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: good-$ROW, namespace: default}, data: {a: b}}
`)
	require.NoError(t, cs.create(t, objs))
	eventually(t, func(c *assert.CollectT) {
		hasCondition(c, cs.get(c, objs[0]), "Applied", "True")
		spokeConfigMap(c, cs, "good-"+row)
	}, "a good ManifestWork is applied on the cluster")
}

func goodReplicaSet(t *testing.T, cs clients, row string) {
	objs := fixture(t, row, tenant+"---"+placementFor+`---
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: good, namespace: good-$ROW}
spec:
  placementRefs: [{name: good}]
  manifestWorkTemplate:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: good-rs-$ROW, namespace: default}, data: {a: b}}
`)
	require.NoError(t, cs.create(t, objs))
	eventually(t, func(c *assert.CollectT) {
		hasCondition(c, cs.get(c, objs[len(objs)-1]), "PlacementVerified", "True")
		spokeConfigMap(c, cs, "good-rs-"+row)
	}, "a good ManifestWorkReplicaSet is rolled out to the cluster")
}

func goodClusterSet(t *testing.T, cs clients, row string) {
	objs := fixture(t, row, `
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: good-$ROW}
---
apiVersion: v1
kind: Namespace
metadata: {name: good-$ROW}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: good-$ROW, namespace: good-$ROW}
spec: {clusterSet: good-$ROW}
`)
	require.NoError(t, cs.create(t, objs))
	eventually(t, func(c *assert.CollectT) {
		hasCondition(c, cs.get(c, objs[0]), "ClusterSetEmpty", "True")
		hasCondition(c, cs.get(c, objs[2]), "Bound", "True")
	}, "a good ManagedClusterSet and its binding get their status")
}

func goodScore(t *testing.T, cs clients, row string) {
	objs := fixture(t, row, tenant+`---
apiVersion: cluster.open-cluster-management.io/v1alpha1
kind: AddOnPlacementScore
metadata: {name: good-$ROW, namespace: $CLUSTER}
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: good, namespace: good-$ROW}
spec:
  tolerations:
  - {key: cluster.open-cluster-management.io/unreachable, operator: Exists}
  - {key: cluster.open-cluster-management.io/unavailable, operator: Exists}
  prioritizerPolicy:
    mode: Exact
    configurations:
    - scoreCoordinate: {type: AddOn, addOn: {resourceName: good-$ROW, scoreName: s}}
      weight: 1
`)
	require.NoError(t, cs.create(t, objs[:3]))
	require.NoError(t, cs.hub.Status().Patch(context.Background(), objs[2], client.RawPatch(types.MergePatchType,
		[]byte(`{"status":{"scores":[{"name":"s","value":50}]}}`))))
	require.NoError(t, cs.create(t, objs[3:]))
	eventually(t, func(c *assert.CollectT) { decided(c, cs, "good-"+row, "good") }, "a Placement scored by a good AddOnPlacementScore is scheduled")
}

// goodAddOn: no Flotilla controller reconciles the addon kinds yet; what must
// hold is that a good object is admitted, every object of the kind still
// decodes through a typed client (what an informer would do), and the hub
// still schedules.
func goodAddOn(kind, ns string) func(t *testing.T, cs clients, row string) {
	return func(t *testing.T, cs clients, row string) {
		text := `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ` + kind + `
metadata: {name: good-$ROW, namespace: "` + ns + `"}
spec: {}
`
		goodPlacement(t, cs, row) // creates namespace good-$ROW too
		require.NoError(t, cs.create(t, fixture(t, row, text)))
		gvk := schema.GroupVersionKind{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Kind: kind + "List"}
		typed, err := scheme.New().New(gvk)
		require.NoError(t, err)
		eventually(t, func(c *assert.CollectT) {
			assert.NoError(c, cs.hub.List(context.Background(), typed.(client.ObjectList)), "a typed list of every %s", kind)
		}, "every %s decodes", kind)
	}
}

func goodPolicy(t *testing.T, cs clients, row string) {
	objs := fixture(t, row, `
apiVersion: v1
kind: Namespace
metadata: {name: good-$ROW}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: wanted, namespace: good-$ROW}
data: {a: b}
---
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: good, namespace: good-$ROW}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: wanted, namespace: good-$ROW}, data: {a: b}}
`)
	for _, u := range objs[:2] {
		require.NoError(t, cs.spoke.Create(context.Background(), u))
		t.Cleanup(func() { cs.remove(t, cs.spoke, u) })
	}
	require.NoError(t, cs.create(t, objs[2:]))
	eventually(t, func(c *assert.CollectT) {
		fieldIs(c, cs.get(c, objs[2]), "Compliant", "status", "compliant")
	}, "a good ConfigurationPolicy is evaluated")
}
