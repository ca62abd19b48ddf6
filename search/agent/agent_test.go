package agent_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	searchv1alpha1 "flotilla.dev/flotilla/api/search/v1alpha1"
	"flotilla.dev/flotilla/search/agent"
	"flotilla.dev/flotilla/search/apigroup"
	"flotilla.dev/flotilla/search/index"
	"flotilla.dev/flotilla/test/testenv"
)

// hub applies Syncs to an index as the search API does (apigroup.Apply),
// counts what it is sent, and fails while down is set.
type hub struct {
	idx     *index.Store
	mu      sync.Mutex
	upserts int
	checks  int
	down    atomic.Bool
	refused atomic.Int32
}

func (h *hub) Sync(ctx context.Context, cluster string, s *searchv1alpha1.Sync) (*searchv1alpha1.SyncResult, error) {
	if h.down.Load() {
		h.refused.Add(1)
		return nil, errors.New("hub unreachable")
	}
	h.mu.Lock()
	for _, r := range s.Resources {
		h.upserts += len(r.Upserts)
		if r.Mode == searchv1alpha1.ModeCheck {
			h.checks++
		}
	}
	idx := h.idx
	h.mu.Unlock()
	return apigroup.Apply(ctx, idx, cluster, s)
}

func (h *hub) counts() (upserts, checks int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.upserts, h.checks
}

var (
	podsGR    = schema.GroupResource{Resource: "pods"}
	cmGR      = schema.GroupResource{Resource: "configmaps"}
	secretsGR = schema.GroupResource{Resource: "secrets"}
)

func names(t *testing.T, idx *index.Store, gr schema.GroupResource, ns string) []string {
	p, err := idx.Search(context.Background(), index.Query{Resource: gr, AllClusters: true, Namespaces: []string{ns}})
	require.NoError(t, err)
	var out []string
	for _, h := range p.Items {
		if h.Object.GetName() != "kube-root-ca.crt" { // every namespace's, from the controller manager
			out = append(out, h.Object.GetName())
		}
	}
	return out
}

func TestAgent(t *testing.T) {
	env := testenv.Start(t, testenv.Options{NoHub: true, Clusters: 1})
	spoke := env.Clusters[0]
	cs, err := kubernetes.NewForConfig(spoke.Config)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, n := range []string{"a", "b"} {
		_, err = cs.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = cs.CoreV1().Secrets("shop").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	idx, err := index.Open(ctx, filepath.Join(t.TempDir(), "search.db"))
	require.NoError(t, err)
	defer idx.Close()
	h := &hub{idx: idx}
	o := agent.Options{SpokeConfig: spoke.Config, ClusterName: "c1", Resources: []string{"configmaps", "secrets", "pods", "widgets.example.com"},
		FlushInterval: 50 * time.Millisecond}
	run := func() (stop func()) {
		actx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- agent.Sync(actx, o, h) }()
		return func() {
			cancel()
			require.NoError(t, <-done)
		}
	}

	stop := run()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.ElementsMatch(c, []string{"a", "b"}, names(t, idx, cmGR, "shop"))
		assert.Equal(c, []string{"db"}, names(t, idx, secretsGR, "shop"))
	}, 30*time.Second, 50*time.Millisecond)
	p, err := idx.Search(ctx, index.Query{Resource: secretsGR, AllClusters: true})
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
	assert.NotContains(t, p.Items[0].Object.Object, "data", "a Secret's data never leaves the cluster")
	assert.Equal(t, "Secret", p.Items[0].Object.GetKind())

	// Changes follow: an update, a delete, a create.
	_, err = cs.CoreV1().ConfigMaps("shop").Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"changed": "yes"}}}, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, cs.CoreV1().ConfigMaps("shop").Delete(ctx, "b", metav1.DeleteOptions{}))
	_, err = cs.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.ElementsMatch(c, []string{"a", "c"}, names(t, idx, cmGR, "shop"))
		p, err := idx.Search(ctx, index.Query{Resource: cmGR, AllClusters: true, Names: []string{"a"}})
		if assert.NoError(c, err) && assert.Len(c, p.Items, 1) {
			assert.Equal(c, "yes", p.Items[0].Object.GetLabels()["changed"])
		}
	}, 30*time.Second, 50*time.Millisecond)
	stop()

	// A restart with nothing changed sends no object: the digests match.
	before, checks := h.counts()
	stop = run()
	require.Eventually(t, func() bool { _, c := h.counts(); return c > checks }, 30*time.Second, 50*time.Millisecond)
	stop()
	after, _ := h.counts()
	assert.Equal(t, before, after, "objects sent again after a restart with nothing changed")

	// A change while the agent is away: the restart sends only it.
	_, err = cs.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	before, _ = h.counts()
	stop = run()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.ElementsMatch(c, []string{"a", "c", "d"}, names(t, idx, cmGR, "shop"))
	}, 30*time.Second, 50*time.Millisecond)
	after, _ = h.counts()
	assert.Equal(t, 1, after-before, "only the new ConfigMap is sent")

	// The hub is unreachable for a while: changes wait and arrive after.
	h.down.Store(true)
	require.NoError(t, cs.CoreV1().ConfigMaps("shop").Delete(ctx, "a", metav1.DeleteOptions{}))
	_, err = cs.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "e"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return h.refused.Load() > 0 }, 30*time.Second, 10*time.Millisecond, "the agent tried while the hub was down")
	h.down.Store(false)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.ElementsMatch(c, []string{"c", "d", "e"}, names(t, idx, cmGR, "shop"))
	}, 60*time.Second, 100*time.Millisecond)

	// The hub's index is replaced (a new database): the next answer names
	// another epoch, and the agent sends what the new index lacks.
	fresh, err := index.Open(ctx, filepath.Join(t.TempDir(), "fresh.db"))
	require.NoError(t, err)
	defer fresh.Close()
	require.NotEqual(t, idx.Epoch(), fresh.Epoch())
	h.mu.Lock()
	h.idx = fresh
	h.mu.Unlock()
	_, err = cs.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "f"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.ElementsMatch(c, []string{"c", "d", "e", "f"}, names(t, fresh, cmGR, "shop"))
		assert.Equal(c, []string{"db"}, names(t, fresh, secretsGR, "shop"))
	}, 60*time.Second, 100*time.Millisecond)
	stop()

	// The resource the cluster does not serve is skipped, not fatal; pods
	// (none) are synced as an empty set.
	v, err := idx.Versions(ctx, "c1", podsGR)
	require.NoError(t, err)
	assert.Empty(t, v)
}
