package ops_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
	"flotilla.dev/flotilla/hub/work/ops"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/test/testenv"
)

func cmManifest(name string) workv1.Manifest {
	return workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"default"}}`)}}
}

func TestOps(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	c, err := client.New(env.Hub.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	for _, ns := range []string{"cluster1", "cluster2", "cluster3", "apps"} {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	for _, cl := range []string{"cluster1", "cluster2", "cluster3", "not-accepted"} {
		require.NoError(t, c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cl}}))
	}

	t.Run("create in named clusters, refuse to overwrite, then overwrite", func(t *testing.T) {
		var progress bytes.Buffer
		created, err := ops.CreateWorks(ctx, c, ops.CreateOptions{Name: "web", Manifests: []workv1.Manifest{cmManifest("a")},
			Clusters: []string{"cluster2", "cluster1"}, Progress: &progress})
		require.NoError(t, err)
		assert.Len(t, created, 2)
		assert.Contains(t, progress.String(), "work web created in cluster cluster1")

		_, err = ops.CreateWorks(ctx, c, ops.CreateOptions{Name: "web", Manifests: []workv1.Manifest{cmManifest("b")},
			Clusters: []string{"cluster1", "cluster3"}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "already exists in cluster(s) cluster1: use --overwrite")
		err = c.Get(ctx, client.ObjectKey{Namespace: "cluster3", Name: "web"}, &workv1.ManifestWork{})
		assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "nothing created when refusing")

		created, err = ops.CreateWorks(ctx, c, ops.CreateOptions{Name: "web", Manifests: []workv1.Manifest{cmManifest("b")},
			Clusters: []string{"cluster1"}, Namespace: "cluster3", Overwrite: true})
		require.NoError(t, err)
		require.Len(t, created, 2)
		assert.True(t, created[0].Replaced)
		w, err := ops.GetWork(ctx, c, "cluster1", "web")
		require.NoError(t, err)
		assert.Contains(t, string(w.Spec.Workload.Manifests[0].Raw), `"name":"b"`)
	})

	t.Run("unknown cluster is explained", func(t *testing.T) {
		_, err := ops.CreateWorks(ctx, c, ops.CreateOptions{Name: "x", Manifests: []workv1.Manifest{cmManifest("a")}, Clusters: []string{"nosuch"}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cluster nosuch does not exist: no ManagedCluster nosuch on the hub")
	})

	t.Run("all or nothing: one missing cluster creates no work anywhere", func(t *testing.T) {
		_, err := ops.CreateWorks(ctx, c, ops.CreateOptions{Name: "aon", Manifests: []workv1.Manifest{cmManifest("a")},
			Clusters: []string{"cluster1", "doesnotexist", "not-accepted", "Bad_Name"}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cluster doesnotexist does not exist: no ManagedCluster doesnotexist on the hub (see flotilla get clusters)")
		assert.Contains(t, err.Error(), "cluster not-accepted has no namespace not-accepted on the hub yet: the hub creates it when the cluster is accepted")
		assert.Contains(t, err.Error(), `cluster "Bad_Name": not a valid cluster name`)
		assert.Contains(t, err.Error(), "nothing was created")
		assert.NotContains(t, err.Error(), "cluster cluster1")
		err = c.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "aon"}, &workv1.ManifestWork{})
		assert.True(t, apierrors.IsNotFound(err), "no work in cluster1: %v", err)
	})

	t.Run("all or nothing: a write the apiserver refuses creates nothing", func(t *testing.T) {
		bad := workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(`{"kind":"ConfigMap","metadata":{"name":"no-api-version"}}`)}}
		_, err := ops.CreateWorks(ctx, c, ops.CreateOptions{Name: "refused", Manifests: []workv1.Manifest{bad}, Clusters: []string{"cluster1", "cluster2"}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cluster cluster1: work refused would be refused")
		assert.Contains(t, err.Error(), "nothing was created")
		for _, cl := range []string{"cluster1", "cluster2"} {
			err = c.Get(ctx, client.ObjectKey{Namespace: cl, Name: "refused"}, &workv1.ManifestWork{})
			assert.True(t, apierrors.IsNotFound(err), cl)
		}
	})

	t.Run("placement decisions", func(t *testing.T) {
		p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}}
		require.NoError(t, c.Create(ctx, p))
		_, err := ops.CreateWorks(ctx, c, ops.CreateOptions{Name: "pl", Manifests: []workv1.Manifest{cmManifest("a")}, Placement: "apps/web"})
		assert.ErrorContains(t, err, "placement apps/web has selected no clusters")
		for i, clusters := range [][]string{{"cluster1"}, {"cluster2"}} {
			d := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-decision-" + string(rune('1'+i)),
				Labels: map[string]string{clusterv1beta1.PlacementLabel: "web"}}}
			require.NoError(t, c.Create(ctx, d))
			for _, cl := range clusters {
				d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: cl})
			}
			require.NoError(t, c.Status().Update(ctx, d))
		}
		other := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "other-decision-1",
			Labels: map[string]string{clusterv1beta1.PlacementLabel: "other"}}}
		require.NoError(t, c.Create(ctx, other))
		other.Status.Decisions = []clusterv1beta1.ClusterDecision{{ClusterName: "cluster3"}}
		require.NoError(t, c.Status().Update(ctx, other))

		got, err := ops.PlacementClusters(ctx, c, "apps/web")
		require.NoError(t, err)
		assert.Equal(t, []string{"cluster1", "cluster2"}, got, "every decision of this placement, none of another's")
		created, err := ops.CreateWorks(ctx, c, ops.CreateOptions{Name: "pl", Manifests: []workv1.Manifest{cmManifest("a")}, Placement: "apps/web"})
		require.NoError(t, err)
		assert.Len(t, created, 2)

		_, err = ops.PlacementClusters(ctx, c, "apps/missing")
		assert.ErrorContains(t, err, "placement apps/missing not found")
		_, err = ops.PlacementClusters(ctx, c, "no-slash")
		assert.ErrorContains(t, err, "want namespace/name")
	})

	t.Run("replicaset", func(t *testing.T) {
		created, err := ops.CreateWorks(ctx, c, ops.CreateOptions{Name: "rs", Manifests: []workv1.Manifest{cmManifest("a")},
			Placement: "apps/web", ReplicaSet: true})
		require.NoError(t, err)
		require.Len(t, created, 1)
		rs := &workv1alpha1.ManifestWorkReplicaSet{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "rs"}, rs))
		require.Len(t, rs.Spec.PlacementRefs, 1)
		assert.Equal(t, "web", rs.Spec.PlacementRefs[0].Name)
		assert.Len(t, rs.Spec.ManifestWorkTemplate.Workload.Manifests, 1)
		_, err = ops.CreateWorks(ctx, c, ops.CreateOptions{Name: "rs", Manifests: []workv1.Manifest{cmManifest("a")}, Placement: "apps/web", ReplicaSet: true})
		assert.ErrorContains(t, err, "already exists: use --overwrite")
		_, err = ops.CreateWorks(ctx, c, ops.CreateOptions{Name: "rs2", Manifests: []workv1.Manifest{cmManifest("a")}, ReplicaSet: true})
		assert.ErrorContains(t, err, "--replicaset needs --placement ns/name")

		// --distribution-policy: the policy must exist; the replica set names it.
		_, err = ops.CreateWorks(ctx, c, ops.CreateOptions{Name: "rs3", Manifests: []workv1.Manifest{cmManifest("a")}, Placement: "apps/web", ReplicaSet: true,
			DistributionPolicy: "regions"})
		assert.ErrorContains(t, err, "DistributionPolicy apps/regions not found: create it in the placement's namespace first")
		_, err = ops.CreateWorks(ctx, c, ops.CreateOptions{Name: "rs3", Manifests: []workv1.Manifest{cmManifest("a")}, Clusters: []string{"cluster1"},
			DistributionPolicy: "regions"})
		assert.ErrorContains(t, err, "--distribution-policy renders a ManifestWorkReplicaSet's works")
		require.NoError(t, c.Create(ctx, &distv1alpha1.DistributionPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "regions"}}))
		var progress bytes.Buffer
		_, err = ops.CreateWorks(ctx, c, ops.CreateOptions{Name: "rs3", Manifests: []workv1.Manifest{cmManifest("a")}, Placement: "apps/web", ReplicaSet: true,
			DistributionPolicy: "regions", Progress: &progress})
		require.NoError(t, err)
		assert.Contains(t, progress.String(), "rendered with DistributionPolicy apps/regions")
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "rs3"}, rs))
		assert.Equal(t, "regions", rs.Annotations[distv1alpha1.PolicyAnnotation])
		sets, err := ops.ListReplicaSets(ctx, c, "apps")
		require.NoError(t, err)
		require.Len(t, sets, 2)
		assert.Equal(t, "rs3", sets[1].Name)
		assert.Equal(t, "regions", sets[1].Policy)
		// --overwrite without the flag drops the annotation.
		_, err = ops.CreateWorks(ctx, c, ops.CreateOptions{Name: "rs3", Manifests: []workv1.Manifest{cmManifest("a")}, Placement: "apps/web", ReplicaSet: true, Overwrite: true})
		require.NoError(t, err)
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "rs3"}, rs))
		assert.Empty(t, rs.Annotations[distv1alpha1.PolicyAnnotation])
	})

	t.Run("list all clusters or the given ones", func(t *testing.T) {
		all, err := ops.ListWorks(ctx, c, ops.ListOptions{})
		require.NoError(t, err)
		var keys []string
		for _, w := range all {
			keys = append(keys, w.Namespace+"/"+w.Name)
		}
		assert.Equal(t, []string{"cluster1/pl", "cluster1/web", "cluster2/pl", "cluster2/web", "cluster3/web"}, keys)
		some, err := ops.ListWorks(ctx, c, ops.ListOptions{Clusters: []string{"cluster3", "cluster1"}})
		require.NoError(t, err)
		assert.Len(t, some, 3, "every given cluster, not only the last")
	})

	t.Run("delete", func(t *testing.T) {
		deleted, err := ops.DeleteWorks(ctx, c, ops.DeleteOptions{Name: "web", Clusters: []string{"cluster1", "cluster2", "cluster9"}})
		assert.Empty(t, deleted)
		assert.ErrorContains(t, err, "work web not found in cluster cluster9")
		assert.ErrorContains(t, err, "nothing was deleted")
		_, err = ops.GetWork(ctx, c, "cluster1", "web")
		require.NoError(t, err, "all or nothing: cluster1's work stays")

		deleted, err = ops.DeleteWorks(ctx, c, ops.DeleteOptions{Name: "web", Clusters: []string{"cluster1", "cluster2"}})
		require.NoError(t, err)
		assert.Equal(t, []string{"cluster1", "cluster2"}, deleted)
		_, err = ops.GetWork(ctx, c, "cluster1", "web")
		assert.ErrorContains(t, err, "work web not found in cluster cluster1")
	})
}
