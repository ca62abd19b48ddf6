//go:build compare

package compare

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/klusterlet/work"
	"flotilla.dev/flotilla/klusterlet/work/worktest"
	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

const works = 1000

// workWorkload runs a burst of ManifestWorks (one ConfigMap each) through
// Flotilla's klusterlet work agent, then through upstream's work agent, on the
// same hub and managed cluster; each agent serves its own cluster name (and
// spoke namespace), and the first is stopped before the second starts.
func workWorkload(b *testing.B, upstream string) []row {
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(b, testenv.Options{Clusters: 1})
	spokeKC := env.Clusters[0].KubeconfigPath
	hubKC := env.Hub.KubeconfigPath

	f := workRun(b, ctx, env, "cmp-flotilla", func(cluster string) func() {
		actx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			hubCfg, spokeCfg := worktest.AgentHubConfig(env.Hub.Config, cluster), rest.CopyConfig(env.Clusters[0].Config)
			if q, burst := sameLimits(b); q > 0 {
				hubCfg.QPS, hubCfg.Burst, spokeCfg.QPS, spokeCfg.Burst = q, burst, q, burst
			}
			if err := work.Run(actx, work.Options{HubConfig: hubCfg,
				SpokeConfig: spokeCfg, ClusterName: cluster, AgentID: cluster}); err != nil {
				b.Errorf("flotilla work agent: %v", err)
			}
		}()
		return func() { stop(); <-done }
	})
	u := workRun(b, ctx, env, "cmp-upstream", func(cluster string) func() {
		ensureNamespaceCS(b, ctx, kubernetes.NewForConfigOrDie(env.Clusters[0].Config), "open-cluster-management-agent")
		args := append([]string{"agent",
			"--spoke-cluster-name", cluster, "--agent-id", cluster,
			"--hub-kubeconfig", hubKC, "--workload-source-config", hubKC, "--kubeconfig", spokeKC,
			"--namespace", "open-cluster-management-agent", "--disable-leader-election",
			"--listen", fmt.Sprintf("127.0.0.1:%d", freePort(b))},
			limitArgs(b, "--kube-api-qps", "--kube-api-burst")...)
		_, stop := startProcess(b, ctx, "upstream-work", filepath.Join(upstream, "work"),
			append(args, limitArgs(b, "--hub-kube-api-qps", "--hub-kube-api-burst")...)...)
		return stop
	})
	const w = "work 1000 burst"
	return []row{
		{w, "all Applied (s)", f.all.Seconds(), u.all.Seconds()},
		{w, "create -> Applied p50 (ms)", ms(f.p50), ms(u.p50)},
		{w, "create -> Applied p99 (ms)", ms(f.p99), ms(u.p99)},
	}
}

type workResult struct{ all, p50, p99 time.Duration }

// workRun prepares cluster's namespaces, starts its agent, waits for a warm-up
// work, then creates the burst (8 goroutines) and clocks until every work
// shows Applied=True on the hub.
func workRun(b *testing.B, ctx context.Context, env *testenv.Env, cluster string, start func(cluster string) (stop func())) workResult {
	hubCfg := rest.CopyConfig(env.Hub.Config)
	hubCfg.QPS, hubCfg.Burst = 200, 400
	hub := kubernetes.NewForConfigOrDie(hubCfg)
	hubWork := workclient.NewForConfigOrDie(hubCfg)
	ensureNamespaceCS(b, ctx, hub, cluster)
	if err := worktest.GrantWorkAgent(ctx, env.Hub.Config, cluster); err != nil {
		b.Fatal(err)
	}
	spokeNS := "bench-" + cluster
	ensureNamespaceCS(b, ctx, kubernetes.NewForConfigOrDie(env.Clusters[0].Config), spokeNS)

	var mu sync.Mutex
	appliedAt := map[string]time.Time{}
	observe := func(obj interface{}) {
		w, ok := obj.(*workv1.ManifestWork)
		if !ok || !meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied) {
			return
		}
		mu.Lock()
		if _, seen := appliedAt[w.Name]; !seen {
			appliedAt[w.Name] = time.Now()
		}
		mu.Unlock()
	}
	inf := workinformers.NewSharedInformerFactoryWithOptions(hubWork, 0, workinformers.WithNamespace(cluster)).Work().V1().ManifestWorks().Informer()
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: observe, UpdateFunc: func(_, o interface{}) { observe(o) }})
	ictx, icancel := context.WithCancel(ctx)
	defer icancel()
	go inf.Run(ictx.Done())
	toolscache.WaitForCacheSync(ictx.Done(), inf.HasSynced)

	stop := start(cluster)
	defer stop()
	newWork := func(name string) *workv1.ManifestWork {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name}}
		w.Spec.Workload.Manifests = []workv1.Manifest{{RawExtension: k8sruntime.RawExtension{Raw: []byte(fmt.Sprintf(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q},"data":{"w":%q}}`, name, spokeNS, name))}}}
		return w
	}
	if _, err := hubWork.WorkV1().ManifestWorks(cluster).Create(ctx, newWork("warmup"), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(appliedAt) }
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		return count() == 1, nil
	}); err != nil {
		b.Fatalf("%s: the agent did not apply a warm-up work within 3 minutes", cluster)
	}

	b.StartTimer()
	var cmu sync.Mutex
	created := map[string]time.Time{}
	begin := time.Now()
	benchutil.ParallelN(b, 8, works, func(i int) error {
		name := fmt.Sprintf("w%04d", i)
		t0 := time.Now()
		if _, err := hubWork.WorkV1().ManifestWorks(cluster).Create(ctx, newWork(name), metav1.CreateOptions{}); err != nil {
			return err
		}
		cmu.Lock()
		created[name] = t0
		cmu.Unlock()
		return nil
	})
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 20*time.Minute, true, func(context.Context) (bool, error) {
		return count() == works+1, nil
	}); err != nil {
		b.Fatalf("%s: only %d of %d works Applied after 20 minutes", cluster, count()-1, works)
	}
	all := time.Since(begin)
	b.StopTimer()

	mu.Lock()
	var lat []time.Duration
	for name, t0 := range created {
		lat = append(lat, appliedAt[name].Sub(t0))
	}
	mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	res := workResult{all: all, p50: lat[len(lat)*50/100], p99: lat[(len(lat)*99+99)/100-1]}
	b.Logf("%s: %d works all Applied in %s; create -> Applied p50 %s p99 %s", cluster, works,
		all.Round(time.Millisecond), res.p50.Round(time.Millisecond), res.p99.Round(time.Millisecond))
	return res
}

func ensureNamespaceCS(b *testing.B, ctx context.Context, cs kubernetes.Interface, ns string) {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !isAlreadyExists(err) {
		b.Fatal(err)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
