package index_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"flotilla.dev/flotilla/internal/pgtest"
	"flotilla.dev/flotilla/search/index"
)

var (
	pods        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	secrets     = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

func obj(t testing.TB, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(y), &u.Object))
	return u
}

func pod(t testing.TB, ns, name, uid, rv, image, phase string, lbls map[string]string) *unstructured.Unstructured {
	u := obj(t, fmt.Sprintf(`{apiVersion: v1, kind: Pod, metadata: {namespace: %s, name: %s, uid: %s, resourceVersion: "%s"},
		spec: {containers: [{name: c, image: "%s"}]}, status: {phase: %s}}`, ns, name, uid, rv, image, phase))
	u.SetLabels(lbls)
	return u
}

// stores runs test on a fresh SQLite index and a fresh PostgreSQL one.
func stores(t *testing.T, test func(t *testing.T, s *index.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		s, err := index.Open(context.Background(), filepath.Join(t.TempDir(), "search.db"))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		test(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		pg := pgtest.Start(t)
		s, err := index.Open(context.Background(), pg.NewDatabase(t))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		test(t, s)
	})
}

func names(p index.Page) []string {
	var out []string
	for _, h := range p.Items {
		out = append(out, h.Cluster+"/"+h.Object.GetNamespace()+"/"+h.Object.GetName())
	}
	return out
}

func TestIndex(t *testing.T) {
	stores(t, func(t *testing.T, s *index.Store) {
		ctx := context.Background()
		_, err := s.Apply(ctx, index.Change{Cluster: "eu-1", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: []*unstructured.Unstructured{
			pod(t, "shop", "web-1", "a1", "1", "nginx:1.25", "Running", map[string]string{"app": "web", "tier": "front"}),
			pod(t, "shop", "web-2", "a2", "1", "nginx:1.24", "Pending", map[string]string{"app": "web"}),
			pod(t, "kube-system", "dns", "a3", "1", "coredns:1.11", "Running", nil),
		}})
		require.NoError(t, err)
		_, err = s.Apply(ctx, index.Change{Cluster: "us-1", Resource: deployments, Kind: "Deployment", Namespaced: true})
		require.NoError(t, err)
		rs, err := s.Resources(ctx)
		require.NoError(t, err)
		assert.Equal(t, []index.Resource{{GroupVersionResource: pods, Kind: "Pod", Namespaced: true}, {GroupVersionResource: deployments, Kind: "Deployment", Namespaced: true}}, rs)
		n, err := s.Apply(ctx, index.Change{Cluster: "us-1", Resource: pods, Kind: "Pod", Namespaced: true, Upserts: []*unstructured.Unstructured{
			pod(t, "shop", "web-1", "b1", "9", "nginx:1.25", "Running", map[string]string{"app": "web"}),
			pod(t, "shop", "api_1", "b2", "9", "api:3", "Running", map[string]string{"app": "api"}),
		}})
		require.NoError(t, err)
		assert.Equal(t, 2, n)

		for _, tc := range []struct {
			name string
			q    index.Query
			want []string
		}{
			{"every cluster", index.Query{AllClusters: true}, []string{"eu-1/kube-system/dns", "eu-1/shop/web-1", "eu-1/shop/web-2", "us-1/shop/api_1", "us-1/shop/web-1"}},
			{"no cluster allowed finds nothing", index.Query{}, nil},
			{"one cluster", index.Query{Clusters: []string{"us-1"}}, []string{"us-1/shop/api_1", "us-1/shop/web-1"}},
			{"image", index.Query{AllClusters: true, Image: "nginx:1.25"}, []string{"eu-1/shop/web-1", "us-1/shop/web-1"}},
			{"label equals", index.Query{AllClusters: true, Labels: labels.SelectorFromSet(labels.Set{"app": "web"})}, []string{"eu-1/shop/web-1", "eu-1/shop/web-2", "us-1/shop/web-1"}},
			{"label !=, matching objects without the key", index.Query{AllClusters: true, Labels: mustSelector(t, "app!=web")}, []string{"eu-1/kube-system/dns", "us-1/shop/api_1"}},
			{"label in and exists", index.Query{AllClusters: true, Labels: mustSelector(t, "app in (web,api),tier")}, []string{"eu-1/shop/web-1"}},
			{"label does not exist", index.Query{AllClusters: true, Labels: mustSelector(t, "!app")}, []string{"eu-1/kube-system/dns"}},
			{"phase", index.Query{AllClusters: true, Phase: "Pending"}, []string{"eu-1/shop/web-2"}},
			{"namespace", index.Query{AllClusters: true, Namespaces: []string{"kube-system"}}, []string{"eu-1/kube-system/dns"}},
			{"names", index.Query{AllClusters: true, Names: []string{"web-2", "dns"}}, []string{"eu-1/kube-system/dns", "eu-1/shop/web-2"}},
			{"a name prefix is no pattern", index.Query{AllClusters: true, NamePrefix: "api_"}, []string{"us-1/shop/api_1"}},
			{"a name prefix's _ is literal", index.Query{AllClusters: true, NamePrefix: "web_"}, nil},
			{"another resource", index.Query{AllClusters: true, Resource: deployments.GroupResource()}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.q.Resource.Resource == "" {
					tc.q.Resource = pods.GroupResource()
				}
				p, err := s.Search(ctx, tc.q)
				require.NoError(t, err)
				assert.Equal(t, tc.want, names(p))
				assert.Empty(t, p.Continue)
			})
		}

		// Pages: continue walks the same order without repeats.
		var got []string
		q := index.Query{Resource: pods.GroupResource(), AllClusters: true, Limit: 2}
		for i := 0; ; i++ {
			require.Less(t, i, 5)
			p, err := s.Search(ctx, q)
			require.NoError(t, err)
			got = append(got, names(p)...)
			if p.Continue == "" {
				break
			}
			q.Continue = p.Continue
		}
		assert.Equal(t, []string{"eu-1/kube-system/dns", "eu-1/shop/web-1", "eu-1/shop/web-2", "us-1/shop/api_1", "us-1/shop/web-1"}, got)

		// A delta replaces and deletes; versions follow.
		n, err = s.Apply(ctx, index.Change{Cluster: "eu-1", Resource: pods, Kind: "Pod", Namespaced: true,
			Upserts: []*unstructured.Unstructured{pod(t, "shop", "web-1", "a1", "2", "nginx:1.26", "Running", nil)}, Deletes: []string{"a2"}})
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		v, err := s.Versions(ctx, "eu-1", pods.GroupResource())
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"a1": "2", "a3": "1"}, v)
		p, err := s.Search(ctx, index.Query{Resource: pods.GroupResource(), AllClusters: true, Image: "nginx:1.25"})
		require.NoError(t, err)
		assert.Equal(t, []string{"us-1/shop/web-1"}, names(p), "the old image row is gone")
		p, err = s.Search(ctx, index.Query{Resource: pods.GroupResource(), AllClusters: true, Labels: mustSelector(t, "app")})
		require.NoError(t, err)
		assert.Equal(t, []string{"us-1/shop/api_1", "us-1/shop/web-1"}, names(p), "the old label rows are gone")

		// Replace drops what it does not name.
		n, err = s.Apply(ctx, index.Change{Cluster: "eu-1", Resource: pods, Kind: "Pod", Namespaced: true, Replace: true,
			Upserts: []*unstructured.Unstructured{pod(t, "shop", "new", "a9", "1", "x:1", "Running", nil)}})
		require.NoError(t, err)
		assert.Equal(t, 1, n)

		// A removed cluster's objects go.
		require.NoError(t, s.DeleteCluster(ctx, "us-1"))
		cl, err := s.Clusters(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"eu-1"}, cl)
		st, err := s.Stats(ctx)
		require.NoError(t, err)
		assert.Equal(t, index.Stats{Objects: 1, Clusters: 1}, st)
		rs, err = s.Resources(ctx)
		require.NoError(t, err)
		assert.Equal(t, []index.Resource{{GroupVersionResource: pods, Kind: "Pod", Namespaced: true}}, rs, "us-1's deployments are gone with it")
	})
}

func TestIndexSanitizesWhatItStores(t *testing.T) {
	stores(t, func(t *testing.T, s *index.Store) {
		ctx := context.Background()
		sec := obj(t, `{apiVersion: v1, kind: Secret, metadata: {namespace: app, name: db, uid: s1, resourceVersion: "1", managedFields: [{manager: x}]}, type: Opaque, data: {password: c2VjcmV0}}`)
		_, err := s.Apply(ctx, index.Change{Cluster: "c", Resource: secrets, Kind: "Secret", Upserts: []*unstructured.Unstructured{sec}})
		require.NoError(t, err)
		p, err := s.Search(ctx, index.Query{Resource: secrets.GroupResource(), AllClusters: true})
		require.NoError(t, err)
		require.Len(t, p.Items, 1)
		assert.NotContains(t, p.Items[0].Object.Object, "data")
		assert.Nil(t, p.Items[0].Object.GetManagedFields())
	})
}

func TestIndexRefusesBadInput(t *testing.T) {
	stores(t, func(t *testing.T, s *index.Store) {
		ctx := context.Background()
		_, err := s.Apply(ctx, index.Change{Cluster: "c", Resource: pods, Kind: "Pod", Upserts: []*unstructured.Unstructured{
			pod(t, "a", "ok", "u1", "1", "x", "Running", nil),
			obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: sneaky, uid: u2}}`),
		}})
		assert.ErrorContains(t, err, "upserts[1] is v1 ConfigMap, not v1 Pod")
		_, err = s.Apply(ctx, index.Change{Cluster: "c", Resource: pods, Kind: "Pod", Upserts: []*unstructured.Unstructured{
			obj(t, `{apiVersion: v1, kind: Pod, metadata: {name: nouid}}`)}})
		assert.ErrorContains(t, err, "upserts[0]")
		v, err := s.Versions(ctx, "c", pods.GroupResource())
		require.NoError(t, err)
		assert.Empty(t, v, "a refused change writes nothing")

		for _, q := range []index.Query{
			{Resource: pods.GroupResource(), AllClusters: true, Continue: "not-a-token"},
			{Resource: pods.GroupResource(), AllClusters: true, Limit: index.MaxLimit + 1},
			{Resource: pods.GroupResource(), AllClusters: true, Labels: mustSelector(t, "n>3")},
			{AllClusters: true},
		} {
			_, err := s.Search(ctx, q)
			assert.ErrorIs(t, err, index.ErrBadQuery, "%+v", q)
		}
	})
}

func mustSelector(t testing.TB, s string) labels.Selector {
	sel, err := labels.Parse(s)
	require.NoError(t, err)
	return sel
}

// A Sync names its resource's kind and version itself: an agent (forged,
// old or buggy) that calls Secrets something else must not get their data
// past the hub's sanitizing. Secrets are stored as kind Secret, and a
// Secret of any version loses its data.
func TestIndexSecretDataCannotBeSmuggled(t *testing.T) {
	stores(t, func(t *testing.T, s *index.Store) {
		ctx := context.Background()
		_, err := s.Apply(ctx, index.Change{Cluster: "c", Resource: secrets, Kind: "Opaque", Namespaced: true, Upserts: []*unstructured.Unstructured{
			obj(t, `{apiVersion: v1, kind: Opaque, metadata: {namespace: app, name: db, uid: s1}, data: {password: c2VjcmV0}}`)}})
		assert.ErrorIs(t, err, index.ErrBadObject, "secrets of another kind than Secret")
		secretsV2 := schema.GroupVersionResource{Version: "v2", Resource: "secrets"}
		_, err = s.Apply(ctx, index.Change{Cluster: "c", Resource: secretsV2, Kind: "Secret", Namespaced: true, Upserts: []*unstructured.Unstructured{
			obj(t, `{apiVersion: v2, kind: Secret, metadata: {namespace: app, name: db2, uid: s2, annotations: {kubectl.kubernetes.io/last-applied-configuration: "{\"data\":{}}"}}, data: {password: c2VjcmV0}, stringData: {a: b}}`)}})
		require.NoError(t, err)
		p, err := s.Search(ctx, index.Query{Resource: secrets.GroupResource(), AllClusters: true})
		require.NoError(t, err)
		for _, h := range p.Items {
			assert.NotContains(t, h.Object.Object, "data", h.Object.GetName())
			assert.NotContains(t, h.Object.Object, "stringData", h.Object.GetName())
			assert.Empty(t, h.Object.GetAnnotations(), h.Object.GetName())
		}
	})
}

// A page of big objects ends at MaxPageBytes, whatever the limit: one
// search does not make the hub hold MaxLimit objects of object.MaxBytes
// (over a GiB). Following the continue tokens still finds every object.
func TestIndexPagesAreBoundedInBytes(t *testing.T) {
	stores(t, func(t *testing.T, s *index.Store) {
		ctx := context.Background()
		cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
		big := strings.Repeat("x", 240<<10)
		var objs []*unstructured.Unstructured
		n := index.MaxPageBytes/len(big) + 8
		for i := range n {
			objs = append(objs, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"namespace": "app", "name": fmt.Sprintf("cm-%03d", i), "uid": fmt.Sprintf("u%03d", i)},
				"data":     map[string]any{"blob": big}}})
		}
		_, err := s.Apply(ctx, index.Change{Cluster: "c", Resource: cms, Kind: "ConfigMap", Namespaced: true, Upserts: objs})
		require.NoError(t, err)
		q := index.Query{Resource: cms.GroupResource(), AllClusters: true}
		seen := 0
		for pages := 0; ; pages++ {
			require.Less(t, pages, n, "the pages end")
			p, err := s.Search(ctx, q)
			require.NoError(t, err)
			size := 0
			for _, h := range p.Items {
				raw, err := h.Object.MarshalJSON()
				require.NoError(t, err)
				size += len(raw)
			}
			assert.LessOrEqual(t, size, index.MaxPageBytes)
			seen += len(p.Items)
			if p.Continue == "" {
				break
			}
			q.Continue = p.Continue
		}
		assert.Equal(t, n, seen)
	})
}
