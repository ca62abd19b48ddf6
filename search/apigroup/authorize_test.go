package apigroup

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"

	"flotilla.dev/flotilla/search/index"
)

// countingAccess lets a user see the clusters in allow, and counts the
// questions asked.
type countingAccess struct {
	allow map[string]bool
	mu    sync.Mutex
	asked int
}

func (a *countingAccess) MayGetCluster(_ context.Context, _ user.Info, cluster string) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked++
	return a.allow[cluster], nil
}

// Any authenticated user names the clusters of a search: naming many that
// do not exist must not cost the hub apiserver a review each (nor fill the
// answers' cache).
func TestNamedClustersCostNoReviewsBeyondTheIndexed(t *testing.T) {
	ctx := context.Background()
	idx, err := index.Open(ctx, filepath.Join(t.TempDir(), "search.db"))
	require.NoError(t, err)
	t.Cleanup(func() { idx.Close() })
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	for _, c := range []string{"east", "west"} {
		p := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"namespace": "shop", "name": "web", "uid": c + "-web"}}}
		_, err := idx.Apply(ctx, index.Change{Cluster: c, Resource: pods, Kind: "Pod", Namespaced: true, Upserts: []*unstructured.Unstructured{p}})
		require.NoError(t, err)
	}
	a := &countingAccess{allow: map[string]bool{"east": true}}
	h := &handlers{o: Options{Index: idx, Access: a}}
	s := search{}
	for i := range 10000 {
		s.ClusterNames = append(s.ClusterNames, fmt.Sprintf("nope-%d", i))
	}
	s.ClusterNames = append(s.ClusterNames, "east", "west")
	require.NoError(t, h.authorize(ctx, &user.DefaultInfo{Name: "mallory"}, &s))
	assert.Equal(t, []string{"east"}, s.Clusters)
	assert.LessOrEqual(t, a.asked, 3, "one review for every cluster, then one per indexed cluster named")
}
