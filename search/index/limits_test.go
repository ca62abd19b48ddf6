package index_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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

// Migration 5 records the size of the objects an earlier release stored,
// so their clusters' usage counts them.
func TestMigrationFiveSizesEarlierRows(t *testing.T) {
	databases(t, func(t *testing.T, url string) {
		ctx := context.Background()
		old, err := sqldb.Open(ctx, url, index.SchemaUpTo(4))
		require.NoError(t, err)
		const raw = `{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"shop","name":"web","uid":"u1"}}`
		_, err = old.ExecContext(ctx, `INSERT INTO search_objects (cluster, gr, uid, version, kind, namespace, name, rv, owner, created_us, phase, reasons, ready, ready_replicas, replicas, object)
				 VALUES ('c', 'pods', 'u1', 'v1', 'Pod', 'shop', 'web', '1', '', 0, 'Running', '', '', 0, 0, '`+raw+`')`)
		require.NoError(t, err)
		require.NoError(t, old.Close())

		s, err := index.Open(ctx, url)
		require.NoError(t, err)
		defer s.Close()
		u, err := s.Usage(ctx, "c")
		require.NoError(t, err)
		assert.Equal(t, index.Usage{Objects: 1, Bytes: int64(len(raw))}, u)
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
