package work_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/klusterlet/work"
	"flotilla.dev/flotilla/klusterlet/work/applied"
	"flotilla.dev/flotilla/klusterlet/work/worktest"
	"flotilla.dev/flotilla/test/testenv"
)

// One environment for the package: a hub and two managed clusters. The agent
// of cluster1 runs for the whole package; tests that need to start and stop an
// agent use cluster2.
var (
	env     *testenv.Env
	hub     client.Client // admin on the hub
	spoke1  kubernetes.Interface
	dyn1    dynamic.Interface
	spoke1c client.Client
	hubHash string
	// agentWrites counts the writes cluster1's agent sends to cluster1.
	agentWrites = &writeCounter{n: map[string]int{}}
)

const (
	syncInterval = time.Second
	evictGrace   = 2 * time.Second
	wait         = 60 * time.Second
	tick         = 100 * time.Millisecond
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(logr.Discard())
	if os.Getenv("FLOTILLA_TEST_VERBOSE") != "" {
		ctrl.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))
	}
	var err error
	env, err = testenv.New(testenv.Options{Clusters: 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	scheme := runtime.NewScheme()
	_ = workv1.Install(scheme)
	_ = corev1.AddToScheme(scheme)
	hub, err = client.New(env.Hub.Config, client.Options{Scheme: scheme})
	must(err)
	spoke1 = kubernetes.NewForConfigOrDie(env.Clusters[0].Config)
	dyn1 = dynamic.NewForConfigOrDie(env.Clusters[0].Config)
	spoke1c, err = client.New(env.Clusters[0].Config, client.Options{Scheme: scheme})
	must(err)
	hubHash = applied.HubHash(env.Hub.Config.Host)
	for _, c := range env.Clusters {
		must(worktest.GrantWorkAgent(context.Background(), env.Hub.Config, c.Name))
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- work.Run(ctx, work.Options{
			HubConfig:                      agentHubConfig(env.Hub.Config, "cluster1"),
			SpokeConfig:                    agentWrites.config(env.Clusters[0].Config),
			ClusterName:                    "cluster1",
			StatusSyncInterval:             syncInterval,
			AppliedWorkEvictionGracePeriod: evictGrace,
		})
	}()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		code = 1
	}
	return code
}

// writeCounter counts the requests that change something (POST, PUT, PATCH,
// DELETE; dry runs excluded) per URL path, as an agent sends them.
type writeCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *writeCounter) config(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet && req.URL.Query().Get("dryRun") == "" {
				c.mu.Lock()
				c.n[req.URL.Path]++
				c.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// count is the number of writes sent to path so far.
func (c *writeCounter) count(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[path]
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func agentHubConfig(admin *rest.Config, cluster string) *rest.Config {
	return worktest.AgentHubConfig(admin, cluster)
}

// ---- fixtures ----

func manifest(t testing.TB, obj interface{}) workv1.Manifest {
	t.Helper()
	b, err := json.Marshal(obj)
	require.NoError(t, err)
	return workv1.Manifest{RawExtension: runtime.RawExtension{Raw: b}}
}

func namespace(name string) map[string]interface{} {
	return map[string]interface{}{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]interface{}{"name": name}}
}

func configMap(ns, name string, data map[string]interface{}) map[string]interface{} {
	return map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": name, "namespace": ns}, "data": data}
}

type workBuilder struct{ w *workv1.ManifestWork }

func newWork(t testing.TB, cluster, name string, objs ...interface{}) *workBuilder {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cluster}}
	for _, o := range objs {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, manifest(t, o))
	}
	return &workBuilder{w}
}

func (b *workBuilder) config(c workv1.ManifestConfigOption) *workBuilder {
	b.w.Spec.ManifestConfigs = append(b.w.Spec.ManifestConfigs, c)
	return b
}

func (b *workBuilder) deleteOption(o *workv1.DeleteOption) *workBuilder {
	b.w.Spec.DeleteOption = o
	return b
}

func (b *workBuilder) create(t testing.TB) *workv1.ManifestWork {
	t.Helper()
	require.NoError(t, hub.Create(context.Background(), b.w))
	return b.w
}

func getWork(t testing.TB, cluster, name string) *workv1.ManifestWork {
	t.Helper()
	w := &workv1.ManifestWork{}
	require.NoError(t, hub.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: name}, w))
	return w
}

// eventuallyWork waits until cond holds for the work.
func eventuallyWork(t testing.TB, cluster, name string, cond func(w *workv1.ManifestWork) bool, msg string) *workv1.ManifestWork {
	t.Helper()
	var last *workv1.ManifestWork
	ok := assert.Eventually(t, func() bool {
		w := &workv1.ManifestWork{}
		if err := hub.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: name}, w); err != nil {
			return false
		}
		last = w
		return cond(w)
	}, wait, tick, msg)
	if !ok {
		t.Fatalf("%s; last status: %s", msg, statusString(last))
	}
	return last
}

func statusString(w *workv1.ManifestWork) string {
	if w == nil {
		return "<none>"
	}
	b, _ := json.MarshalIndent(w.Status, "", " ")
	return string(b)
}

func condIs(conds []metav1.Condition, typ string, st metav1.ConditionStatus) bool {
	c := meta.FindStatusCondition(conds, typ)
	return c != nil && c.Status == st
}

func applied_(w *workv1.ManifestWork) bool {
	return w.Status.Conditions != nil && condIs(w.Status.Conditions, "Applied", "True") &&
		meta.FindStatusCondition(w.Status.Conditions, "Applied").ObservedGeneration == w.Generation
}

func waitApplied(t testing.TB, cluster, name string) *workv1.ManifestWork {
	t.Helper()
	return eventuallyWork(t, cluster, name, applied_, "work "+name+" should be Applied")
}

func deleteWork(t testing.TB, cluster, name string) {
	t.Helper()
	require.NoError(t, hub.Delete(context.Background(), &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name}}))
	require.Eventually(t, func() bool {
		err := hub.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: name}, &workv1.ManifestWork{})
		return apierrors.IsNotFound(err)
	}, wait, tick, "work %s should be gone from the hub", name)
}

func appliedWork(t testing.TB, c client.Client, workName string) (*workv1.AppliedManifestWork, error) {
	amw := &workv1.AppliedManifestWork{}
	err := c.Get(context.Background(), client.ObjectKey{Name: applied.Name(hubHash, workName)}, amw)
	return amw, err
}

// recordedWork waits for the work's AppliedManifestWork to list n resources:
// the agent writes the hub status first and the record after it
// (controller.go), so an Applied work can have a record a write behind.
func recordedWork(t testing.TB, c client.Client, workName string, n int) *workv1.AppliedManifestWork {
	t.Helper()
	var amw *workv1.AppliedManifestWork
	require.Eventually(t, func() bool {
		a, err := appliedWork(t, c, workName)
		amw = a
		return err == nil && len(a.Status.AppliedResources) == n
	}, wait, tick/10, "the record of work %s should list %d resources", workName, n)
	return amw
}

func getCM(t testing.TB, ns, name string) (*corev1.ConfigMap, error) {
	return spoke1.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func eventuallyCM(t testing.TB, ns, name string, cond func(cm *corev1.ConfigMap, err error) bool, msg string) {
	t.Helper()
	require.Eventually(t, func() bool { cm, err := getCM(t, ns, name); return cond(cm, err) }, wait, tick, msg)
}

func manifestCond(w *workv1.ManifestWork, ordinal int, typ string) *metav1.Condition {
	for _, m := range w.Status.ResourceStatus.Manifests {
		if int(m.ResourceMeta.Ordinal) == ordinal {
			return meta.FindStatusCondition(m.Conditions, typ)
		}
	}
	return nil
}
