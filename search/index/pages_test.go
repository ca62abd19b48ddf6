package index_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"flotilla.dev/flotilla/internal/pgtest"
	"flotilla.dev/flotilla/internal/sqldb"
	"flotilla.dev/flotilla/search/index"
)

// crashing is a Pod whose container waits in CrashLoopBackOff.
func crashing(t testing.TB, ns, name, uid, image string) *unstructured.Unstructured {
	return obj(t, fmt.Sprintf(`{apiVersion: v1, kind: Pod, metadata: {namespace: %s, name: %s, uid: %s, resourceVersion: "1"},
		spec: {containers: [{name: c, image: "%s"}]},
		status: {phase: Running, containerStatuses: [{name: c, ready: false, state: {waiting: {reason: CrashLoopBackOff}}}]}}`, ns, name, uid, image))
}

// An image or a reason drives the search from its own table, in the page
// order: pages of one hit follow each other as the whole list, with the
// other filters applied, and both filters together.
func TestImageAndReasonPages(t *testing.T) {
	stores(t, func(t *testing.T, s *index.Store) {
		ctx := context.Background()
		for _, c := range []string{"b", "a"} {
			_, err := s.Apply(ctx, index.Change{Cluster: c, Resource: pods, Kind: "Pod", Namespaced: true, Upserts: []*unstructured.Unstructured{
				crashing(t, "zz", "p1", c+"1", "nginx:1.25"),
				crashing(t, "yy", "p2", c+"2", "nginx:1.25"),
				pod(t, "yy", "p3", c+"3", "1", "nginx:1.25", "Running", nil),
				crashing(t, "yy", "p4", c+"4", "redis:7"),
			}})
			require.NoError(t, err)
		}
		all := func(q index.Query) []string {
			q.Resource, q.Limit = pods.GroupResource(), 1
			var got []string
			for {
				p, err := s.Search(ctx, q)
				require.NoError(t, err)
				got = append(got, names(p)...)
				if p.Continue == "" {
					return got
				}
				q.Continue = p.Continue
			}
		}
		assert.Equal(t, []string{"a/yy/p2", "a/yy/p3", "a/zz/p1", "b/yy/p2", "b/yy/p3", "b/zz/p1"}, all(index.Query{AllClusters: true, Image: "nginx:1.25"}))
		assert.Equal(t, []string{"a/yy/p2", "a/yy/p4", "a/zz/p1", "b/yy/p2", "b/yy/p4", "b/zz/p1"}, all(index.Query{AllClusters: true, Reason: "CrashLoopBackOff"}))
		assert.Equal(t, []string{"a/yy/p2", "a/zz/p1", "b/yy/p2", "b/zz/p1"}, all(index.Query{AllClusters: true, Image: "nginx:1.25", Reason: "CrashLoopBackOff"}))
		assert.Equal(t, []string{"b/yy/p4"}, all(index.Query{Clusters: []string{"b"}, Reason: "CrashLoopBackOff", Namespaces: []string{"yy"}, Names: []string{"p4"}}))
		assert.Empty(t, all(index.Query{Reason: "CrashLoopBackOff"}), "no cluster allowed")

		// A Pod that changes its image and its name leaves the old rows.
		_, err := s.Apply(ctx, index.Change{Cluster: "a", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: []*unstructured.Unstructured{
			pod(t, "yy", "p2", "a2", "2", "nginx:1.26", "Running", nil)}})
		require.NoError(t, err)
		assert.Equal(t, []string{"a/yy/p3", "a/zz/p1", "b/yy/p2", "b/yy/p3", "b/zz/p1"}, all(index.Query{AllClusters: true, Image: "nginx:1.25"}))
		assert.Equal(t, []string{"a/yy/p4", "a/zz/p1", "b/yy/p2", "b/yy/p4", "b/zz/p1"}, all(index.Query{AllClusters: true, Reason: "CrashLoopBackOff"}))
	})
}

// Migration 4 gives the image and reason rows an earlier release wrote
// their object's namespace and name, so they keep being found, in order.
func TestMigrationFourFillsEarlierRows(t *testing.T) {
	databases(t, func(t *testing.T, url string) {
		ctx := context.Background()
		old, err := sqldb.Open(ctx, url, index.SchemaUpTo(3))
		require.NoError(t, err)
		for _, stmt := range []string{
			`INSERT INTO search_objects (cluster, gr, uid, version, kind, namespace, name, rv, owner, created_us, phase, reasons, ready, ready_replicas, replicas, object)
				 VALUES ('c', 'pods', 'u1', 'v1', 'Pod', 'shop', 'web', '1', '', 0, 'Running', '|CrashLoopBackOff|', '', 0, 0, '{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"shop","name":"web","uid":"u1"}}')`,
			`INSERT INTO search_images (cluster, gr, uid, image) VALUES ('c', 'pods', 'u1', 'nginx:1.25')`,
			`INSERT INTO search_reasons (cluster, gr, uid, reason) VALUES ('c', 'pods', 'u1', 'CrashLoopBackOff')`,
		} {
			_, err := old.ExecContext(ctx, stmt)
			require.NoError(t, err)
		}
		require.NoError(t, old.Close())

		s, err := index.Open(ctx, url)
		require.NoError(t, err)
		defer s.Close()
		for _, q := range []index.Query{{Image: "nginx:1.25"}, {Reason: "CrashLoopBackOff"}} {
			q.Resource, q.AllClusters = pods.GroupResource(), true
			p, err := s.Search(ctx, q)
			require.NoError(t, err)
			assert.Equal(t, []string{"c/shop/web"}, names(p))
			q.Namespaces = []string{"shop"}
			p, err = s.Search(ctx, q)
			require.NoError(t, err)
			assert.Len(t, p.Items, 1)
		}
	})
}

// databases runs test on an empty SQLite file and an empty PostgreSQL
// database, given as the URLs index.Open takes.
func databases(t *testing.T, test func(t *testing.T, url string)) {
	t.Run("sqlite", func(t *testing.T) { test(t, filepath.Join(t.TempDir(), "search.db")) })
	t.Run("postgres", func(t *testing.T) { test(t, pgtest.Start(t).NewDatabase(t)) })
}
