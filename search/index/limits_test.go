package index_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"flotilla.dev/flotilla/internal/sqldb"
	"flotilla.dev/flotilla/search/index"
)

func podsNamed(t *testing.T, n int, prefix string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for i := range n {
		out = append(out, pod(t, "shop", fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("%s-uid-%d", prefix, i), "1", "nginx:1.25", "Running", nil))
	}
	return out
}

// A cluster may keep no more than the Limits: a change past them is not
// written at all, other clusters are not affected, and a cluster above a
// lowered limit may still shrink.
func TestLimitsBoundACluster(t *testing.T) {
	stores(t, func(t *testing.T, s *index.Store) {
		ctx := context.Background()
		s.SetLimits(index.Limits{Objects: 3})
		_, err := s.Apply(ctx, index.Change{Cluster: "east", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: podsNamed(t, 3, "a"), Replace: true})
		require.NoError(t, err)
		_, err = s.Apply(ctx, index.Change{Cluster: "east", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: podsNamed(t, 1, "b")})
		require.ErrorIs(t, err, index.ErrOverLimit)
		assert.ErrorContains(t, err, "it would keep 4 objects, the hub allows 3 a cluster (flotilla hub --search-max-objects-per-cluster)")
		assert.ErrorContains(t, err, "cluster east")
		u, err := s.Usage(ctx, "east")
		require.NoError(t, err)
		assert.Equal(t, int64(3), u.Objects, "the refused change wrote nothing")
		p, err := s.Search(ctx, index.Query{Resource: pods.GroupResource(), AllClusters: true})
		require.NoError(t, err)
		assert.Len(t, p.Items, 3)

		// An update in place does not grow the count.
		_, err = s.Apply(ctx, index.Change{Cluster: "east", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: podsNamed(t, 2, "a")})
		require.NoError(t, err)
		// Another cluster has its own allowance.
		_, err = s.Apply(ctx, index.Change{Cluster: "west", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: podsNamed(t, 3, "a"), Replace: true})
		require.NoError(t, err)

		// Lowered below what east keeps: east may shrink, not grow.
		s.SetLimits(index.Limits{Objects: 1})
		_, err = s.Apply(ctx, index.Change{Cluster: "east", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: podsNamed(t, 2, "a"), Replace: true})
		require.NoError(t, err, "a Replace that shrinks east is written")
		_, err = s.Apply(ctx, index.Change{Cluster: "east", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: podsNamed(t, 1, "c")})
		require.ErrorIs(t, err, index.ErrOverLimit)
		_, err = s.Apply(ctx, index.Change{Cluster: "east", Resource: pods, Kind: "Pod", Namespaced: true, Deletes: []string{"a-uid-0"}})
		require.NoError(t, err, "deletes are always written")

		// Bytes: the stored JSON of the cluster's objects.
		u, err = s.Usage(ctx, "west")
		require.NoError(t, err)
		require.Positive(t, u.Bytes)
		s.SetLimits(index.Limits{Bytes: u.Bytes + 10})
		_, err = s.Apply(ctx, index.Change{Cluster: "west", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: podsNamed(t, 1, "d")})
		require.ErrorIs(t, err, index.ErrOverLimit)
		assert.ErrorContains(t, err, "(flotilla hub --search-max-bytes-per-cluster)")
		s.SetLimits(index.Limits{})
		_, err = s.Apply(ctx, index.Change{Cluster: "west", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: podsNamed(t, 1, "d")})
		require.NoError(t, err, "no limits: written")
	})
}

// A change is written in batches: one larger than a statement's parameters
// allow is written whole, and an object given twice keeps its last version.
func TestLargeChangesAndRepeatedObjects(t *testing.T) {
	stores(t, func(t *testing.T, s *index.Store) {
		ctx := context.Background()
		var many []*unstructured.Unstructured
		for i := range 2500 {
			many = append(many, pod(t, "shop", fmt.Sprintf("p-%d", i), fmt.Sprintf("uid-%d", i), "1", "nginx:1.25", "Running",
				map[string]string{"app": "web", "tier": "front", "n": fmt.Sprint(i % 7), "team": "a"}))
		}
		again := pod(t, "shop", "p-0", "uid-0", "2", "nginx:1.26", "Running", map[string]string{"app": "api"})
		n, err := s.Apply(ctx, index.Change{Cluster: "east", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: append(many, again), Replace: true})
		require.NoError(t, err)
		assert.Equal(t, 2500, n)
		p, err := s.Search(ctx, index.Query{Resource: pods.GroupResource(), AllClusters: true, Labels: mustSelector(t, "app=web"), Limit: 5000})
		require.NoError(t, err)
		assert.Len(t, p.Items, 2499, "every label row written, p-0's replaced by its later version")
		p, err = s.Search(ctx, index.Query{Resource: pods.GroupResource(), AllClusters: true, Image: "nginx:1.26"})
		require.NoError(t, err)
		assert.Equal(t, []string{"east/shop/p-0"}, names(p))
		v, err := s.Versions(ctx, "east", pods.GroupResource())
		require.NoError(t, err)
		assert.Equal(t, "2", v["uid-0"])

		// Deletes in bulk take the objects' label and image rows too.
		var gone []string
		for i := range 2500 {
			gone = append(gone, fmt.Sprintf("uid-%d", i))
		}
		n, err = s.Apply(ctx, index.Change{Cluster: "east", Resource: pods, Kind: "Pod", Namespaced: true, Deletes: gone})
		require.NoError(t, err)
		assert.Zero(t, n)
		for _, q := range []index.Query{{Labels: mustSelector(t, "app")}, {Image: "nginx:1.25"}} {
			q.Resource, q.AllClusters = pods.GroupResource(), true
			p, err = s.Search(ctx, q)
			require.NoError(t, err)
			assert.Empty(t, p.Items)
		}
	})
}

// Migrations 5 and 6 record the size of the objects an earlier release
// stored, so their clusters' usage counts them: what Apply charges for the
// same object, its label and image rows included.
func TestMigrationsSizeEarlierRows(t *testing.T) {
	databases(t, func(t *testing.T, url string) {
		ctx := context.Background()
		old, err := sqldb.Open(ctx, url, index.SchemaUpTo(4))
		require.NoError(t, err)
		p := pod(t, "shop", "web", "u1", "7", "nginx:1.25", "Running", map[string]string{"app": "web", "tier": "front"})
		raw, err := p.MarshalJSON()
		require.NoError(t, err)
		for _, q := range []string{
			`INSERT INTO search_objects (cluster, gr, uid, version, kind, namespace, name, rv, owner, created_us, phase, reasons, ready, ready_replicas, replicas, object)
				 VALUES ('c', 'pods', 'u1', 'v1', 'Pod', 'shop', 'web', '7', '', 0, 'Running', '', '', -1, -1, '` + string(raw) + `')`,
			`INSERT INTO search_labels (cluster, gr, uid, key, value) VALUES ('c', 'pods', 'u1', 'app', 'web')`,
			`INSERT INTO search_labels (cluster, gr, uid, key, value) VALUES ('c', 'pods', 'u1', 'tier', 'front')`,
			`INSERT INTO search_images (cluster, gr, uid, image, namespace, name) VALUES ('c', 'pods', 'u1', 'nginx:1.25', 'shop', 'web')`,
		} {
			_, err = old.ExecContext(ctx, q)
			require.NoError(t, err)
		}
		require.NoError(t, old.Close())

		s, err := index.Open(ctx, url)
		require.NoError(t, err)
		defer s.Close()
		migrated, err := s.Usage(ctx, "c")
		require.NoError(t, err)
		assert.Greater(t, migrated.Bytes, int64(len(raw)))
		_, err = s.Apply(ctx, index.Change{Cluster: "c", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: []*unstructured.Unstructured{p}})
		require.NoError(t, err)
		applied, err := s.Usage(ctx, "c")
		require.NoError(t, err)
		assert.Equal(t, index.Usage{Objects: 1, Bytes: applied.Bytes}, migrated, "the migration charges what Apply does")
	})
}

// A cluster's usage counts every byte the index keeps for its objects, not
// only their JSON: a compromised agent sends a Pod whose spec (thousands of
// container images, dropped by object.Fit) is far bigger than what the
// object keeps, or thousands of tiny labels, each a row of its own with the
// object's UID; the rows of its images and labels are charged.
func TestUsageCountsEveryRow(t *testing.T) {
	stores(t, func(t *testing.T, s *index.Store) {
		ctx := context.Background()
		const n = 4000
		uid := strings.Repeat("u", 36)
		// Images: a spec of n containers, cut away by Fit.
		var containers []any
		imageBytes := 0
		for i := range n {
			img := fmt.Sprintf("registry.example/%064d:1", i)
			imageBytes += len(img)
			containers = append(containers, map[string]any{"name": fmt.Sprint("c", i), "image": img})
		}
		p := pod(t, "shop", "many-images", uid, "1", "nginx:1.25", "Running", nil)
		require.NoError(t, unstructured.SetNestedSlice(p.Object, containers, "spec", "containers"))
		_, err := s.Apply(ctx, index.Change{Cluster: "east", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: []*unstructured.Unstructured{p}})
		require.NoError(t, err)
		page, err := s.Search(ctx, index.Query{Resource: pods.GroupResource(), AllClusters: true, Image: fmt.Sprintf("registry.example/%064d:1", n-1)})
		require.NoError(t, err)
		require.Len(t, page.Items, 1, "the images are indexed")
		assert.Contains(t, page.Items[0].Object.GetAnnotations(), "search.flotilla.dev/truncated", "the object itself was cut")
		u, err := s.Usage(ctx, "east")
		require.NoError(t, err)
		// Each image row holds at least the image, the UID, the namespace and the name.
		assert.Greater(t, u.Bytes, int64(imageBytes+n*(len(uid)+len("shop")+len("many-images"))), "the image rows are charged")

		// Labels: n labels of a few bytes of JSON each.
		lbls := map[string]string{}
		labelRowBytes := 0
		for i := range n {
			k := fmt.Sprintf("l%d", i)
			lbls[k] = ""
			labelRowBytes += len("west") + len("pods") + len(uid) + len(k)
		}
		_, err = s.Apply(ctx, index.Change{Cluster: "west", Resource: pods, Kind: "Pod", Namespaced: true,
			Upserts: []*unstructured.Unstructured{pod(t, "shop", "many-labels", uid, "1", "nginx:1.25", "Running", lbls)}})
		require.NoError(t, err)
		u, err = s.Usage(ctx, "west")
		require.NoError(t, err)
		assert.Greater(t, u.Bytes, int64(labelRowBytes), "the label rows are charged")

		// So a limit holds them back.
		s.SetLimits(index.Limits{Bytes: 256 << 10})
		_, err = s.Apply(ctx, index.Change{Cluster: "north", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: []*unstructured.Unstructured{pod(t, "shop", "many-images", "other", "1", "nginx:1.25", "Running", nil)}})
		require.NoError(t, err)
		q := pod(t, "shop", "many-images-2", "other-2", "1", "nginx:1.25", "Running", nil)
		require.NoError(t, unstructured.SetNestedSlice(q.Object, containers, "spec", "containers"))
		_, err = s.Apply(ctx, index.Change{Cluster: "north", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: []*unstructured.Unstructured{q}})
		require.ErrorIs(t, err, index.ErrOverLimit)
	})
}

// A change with no objects still writes its resource's row (discovery): a
// cluster may not name thousands of resources, nor huge ones.
func TestResourcesOfAClusterAreBounded(t *testing.T) {
	stores(t, func(t *testing.T, s *index.Store) {
		ctx := context.Background()
		s.SetLimits(index.DefaultLimits)
		big := schema.GroupVersionResource{Group: strings.Repeat("g", 300) + ".example", Version: "v1", Resource: "things"}
		_, err := s.Apply(ctx, index.Change{Cluster: "east", Resource: big, Kind: "Thing", Namespaced: true})
		require.ErrorIs(t, err, index.ErrBadObject, "a group name longer than Kubernetes allows")
		_, err = s.Apply(ctx, index.Change{Cluster: "east", Resource: schema.GroupVersionResource{Group: "x.example", Version: "v1", Resource: "things"}, Kind: strings.Repeat("K", 100)})
		require.ErrorIs(t, err, index.ErrBadObject, "a kind longer than Kubernetes allows")
		for i := range index.MaxResourcesPerCluster {
			_, err := s.Apply(ctx, index.Change{Cluster: "east", Resource: schema.GroupVersionResource{Group: "x.example", Version: "v1", Resource: fmt.Sprintf("r%d", i)}, Kind: "R"})
			require.NoError(t, err)
		}
		_, err = s.Apply(ctx, index.Change{Cluster: "east", Resource: schema.GroupVersionResource{Group: "x.example", Version: "v1", Resource: "one-more"}, Kind: "R"})
		require.ErrorIs(t, err, index.ErrOverLimit)
		assert.ErrorContains(t, err, fmt.Sprintf("%d resources", index.MaxResourcesPerCluster))
		_, err = s.Apply(ctx, index.Change{Cluster: "east", Resource: schema.GroupVersionResource{Group: "x.example", Version: "v1", Resource: "r0"}, Kind: "R"})
		require.NoError(t, err, "a resource it has is written again")
		_, err = s.Apply(ctx, index.Change{Cluster: "west", Resource: schema.GroupVersionResource{Group: "x.example", Version: "v1", Resource: "one-more"}, Kind: "R"})
		require.NoError(t, err, "another cluster has its own")
	})
}

// One cluster cannot redefine for everyone a resource the others sync: a
// compromised cluster that syncs pods as cluster-scoped version a1 is
// outvoted; a user who sees only that cluster sees its definition.
func TestResourcesFollowTheMajority(t *testing.T) {
	stores(t, func(t *testing.T, s *index.Store) {
		ctx := context.Background()
		for _, c := range []string{"east", "west"} {
			_, err := s.Apply(ctx, index.Change{Cluster: c, Resource: pods, Kind: "Pod", Namespaced: true, Upserts: podsNamed(t, 1, c), Replace: true})
			require.NoError(t, err)
		}
		odd := pod(t, "", "evil", "evil-uid", "1", "x", "Running", nil)
		odd.SetAPIVersion("a1")
		odd.SetNamespace("")
		_, err := s.Apply(ctx, index.Change{Cluster: "mallory", Resource: schema.GroupVersionResource{Version: "a1", Resource: "pods"}, Kind: "Pod",
			Upserts: []*unstructured.Unstructured{odd}, Replace: true})
		require.NoError(t, err)
		all, err := s.Resources(ctx)
		require.NoError(t, err)
		require.Len(t, all, 1)
		assert.Equal(t, "v1", all[0].Version)
		assert.True(t, all[0].Namespaced)
		own, err := s.ResourcesIn(ctx, []string{"mallory"})
		require.NoError(t, err)
		require.Len(t, own, 1)
		assert.Equal(t, "a1", own[0].Version)
	})
}
