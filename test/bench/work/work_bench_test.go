package work

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/util/wait"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"flotilla.dev/flotilla/klusterlet/work"
	"flotilla.dev/flotilla/klusterlet/work/worktest"
	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

// BenchmarkWorkDistribution creates 1,000 ManifestWorks (one ConfigMap each)
// over 10 clusters as fast as the hub takes them, and measures for each work
// the time from Create to (a) its ConfigMap existing on the managed cluster
// and (b) Applied=True on the hub. The 10 clusters are simulated: 10 agents,
// each with its own cluster name, hub identity and AgentID, share one managed
// apiserver (each applies into its own namespace).
//
// A second run puts 1,000 works on a single cluster, to measure the memory of
// one agent holding 1,000 works. FLOTILLA_BENCH_WORKS and
// FLOTILLA_BENCH_CLUSTERS replace both runs with one of the given size;
// FLOTILLA_BENCH_AGENT_WORKERS sets each agent's Options.Workers and
// FLOTILLA_BENCH_AGENT_QPS its clients' QPS (burst twice that); default: the
// agent's.
//
// FLOTILLA_BENCH_RATE=N switches from the burst to a steady rate: the works
// are created at N per second (each create on its own goroutine, so a slow
// create does not slow the rate), and the metric rate-works/s says so; the
// other metric names stay the same.
func BenchmarkWorkDistribution(b *testing.B) {
	// 1,000 works over 10 clusters for latency; 1,000 works on one cluster for
	// the memory of one agent holding 1,000 works.
	sizes := [][2]int{{1000, 10}, {1000, 1}}
	if os.Getenv("FLOTILLA_BENCH_WORKS") != "" || os.Getenv("FLOTILLA_BENCH_CLUSTERS") != "" {
		sizes = [][2]int{{benchutil.EnvInt(b, "FLOTILLA_BENCH_WORKS", 1000, 0), benchutil.EnvInt(b, "FLOTILLA_BENCH_CLUSTERS", 10, 0)}}
	}
	for _, size := range sizes {
		b.Run(fmt.Sprintf("works=%d/clusters=%d", size[0], size[1]), func(b *testing.B) {
			for range b.N {
				run(b, size[0], size[1])
			}
		})
	}
}

func run(b *testing.B, works, clusters int) {
	timeout := time.Duration(benchutil.EnvInt(b, "FLOTILLA_BENCH_TIMEOUT_S", 600, 0)) * time.Second
	rate := benchutil.EnvInt(b, "FLOTILLA_BENCH_RATE", 0, 0)             // 0: a burst, 8 concurrent creators
	workers := benchutil.EnvInt(b, "FLOTILLA_BENCH_AGENT_WORKERS", 0, 0) // 0: the agent's default
	agentQPS := benchutil.EnvInt(b, "FLOTILLA_BENCH_AGENT_QPS", 0, 0)    // 0: the agent's default
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(b, testenv.Options{Clusters: 1})
	spokeCfg := env.Clusters[0].Config
	spoke := kubernetes.NewForConfigOrDie(spokeCfg)
	hubCfg := rest.CopyConfig(env.Hub.Config)
	hubCfg.QPS, hubCfg.Burst = 200, 400
	hubWork := workclient.NewForConfigOrDie(hubCfg)

	names := make([]string, clusters)
	for i := range names {
		names[i] = fmt.Sprintf("cluster%d", i+1)
		if err := worktest.GrantWorkAgent(ctx, env.Hub.Config, names[i]); err != nil {
			b.Fatal(err)
		}
		if _, err := spoke.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench-" + names[i]}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}

	// Observe results through watches, as a user would.
	var mu sync.Mutex
	created := map[string]time.Time{}   // work key -> Create called
	onSpoke := map[string]time.Time{}   // work key -> ConfigMap seen
	appliedAt := map[string]time.Time{} // work key -> Applied=True seen
	// Informers, not bare watches: they re-list if the apiserver closes a watch.
	cmInformer := informers.NewSharedInformerFactoryWithOptions(spoke, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "bench=work" })).Core().V1().ConfigMaps().Informer()
	_, _ = cmInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		mu.Lock()
		key := dotToSlash(cm.Labels["work"])
		if _, seen := onSpoke[key]; !seen {
			onSpoke[key] = time.Now()
		}
		mu.Unlock()
	}})
	allApplied := make(chan struct{})
	nWarm, nApplied := 0, 0 // warm-up works, benchmark works Applied
	observe := func(obj interface{}) {
		w, ok := obj.(*workv1.ManifestWork)
		if !ok || !meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		key := w.Namespace + "/" + w.Name
		if _, seen := appliedAt[key]; seen {
			return
		}
		appliedAt[key] = time.Now()
		if strings.HasPrefix(w.Name, "warmup-") {
			nWarm++
		} else if nApplied++; nApplied == works {
			close(allApplied)
		}
	}
	workInformer := workinformers.NewSharedInformerFactory(hubWork, 0).Work().V1().ManifestWorks().Informer()
	_, _ = workInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj interface{}) { observe(obj) },
	})
	go cmInformer.Run(ctx.Done())
	go workInformer.Run(ctx.Done())
	toolscache.WaitForCacheSync(ctx.Done(), cmInformer.HasSynced, workInformer.HasSynced)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	tr := &tracer{at: map[types.NamespacedName]map[work.Stage]time.Time{}}
	agentCtx, stopAgents := context.WithCancel(ctx)
	var agents sync.WaitGroup
	for _, name := range names {
		agents.Add(1)
		go func() {
			defer agents.Done()
			agentHub, agentSpoke := worktest.AgentHubConfig(env.Hub.Config, name), rest.CopyConfig(spokeCfg)
			if agentQPS > 0 {
				agentHub.QPS, agentHub.Burst = float32(agentQPS), 2*agentQPS
				agentSpoke.QPS, agentSpoke.Burst = float32(agentQPS), 2*agentQPS
			}
			if err := work.Run(agentCtx, work.Options{
				HubConfig: agentHub, SpokeConfig: agentSpoke,
				ClusterName: name, AgentID: name, Workers: workers, Tracer: tr,
			}); err != nil {
				b.Errorf("agent %s: %v", name, err)
			}
		}()
	}
	defer func() {
		stopAgents()
		// Diagnostics: an agent should stop promptly; if not, keep a goroutine dump.
		t := time.AfterFunc(20*time.Second, func() {
			f, err := os.CreateTemp("", "work-bench-goroutines-*.txt")
			if err != nil {
				return
			}
			_ = pprof.Lookup("goroutine").WriteTo(f, 2)
			_ = f.Close()
			b.Logf("agents still stopping after 20s; goroutines in %s", f.Name())
		})
		agents.Wait()
		t.Stop()
	}()

	// Wait until every agent serves: one warm-up work per cluster applied.
	for _, name := range names {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "warmup-" + name}}
		w.Spec.Workload.Manifests = []workv1.Manifest{{RawExtension: k8sruntime.RawExtension{Raw: []byte(fmt.Sprintf(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"warmup","namespace":"bench-%s"}}`, name))}}}
		if _, err := hubWork.WorkV1().ManifestWorks(name).Create(ctx, w, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return nWarm == clusters, nil
	}); err != nil {
		mu.Lock()
		b.Fatalf("only %d of %d agents ready after 2 minutes: %v", nWarm, clusters, err)
	}
	b.ResetTimer()
	start := time.Now()
	create := func(i int) {
		cluster := names[i%clusters]
		name := fmt.Sprintf("%s-w%04d", cluster, i)
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name}}
		w.Spec.Workload.Manifests = []workv1.Manifest{{RawExtension: k8sruntime.RawExtension{Raw: []byte(fmt.Sprintf(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"bench-%s","labels":{"bench":"work","work":"%s.%s"}},"data":{"i":"%d"}}`,
			name, cluster, cluster, name, i))}}}
		key := cluster + "/" + name
		t0 := time.Now()
		mu.Lock()
		created[key] = t0
		mu.Unlock()
		if _, err := hubWork.WorkV1().ManifestWorks(cluster).Create(ctx, w, metav1.CreateOptions{}); err != nil {
			b.Errorf("create %s: %v", key, err)
			mu.Lock()
			delete(created, key)
			mu.Unlock()
		}
	}
	var creators sync.WaitGroup
	if rate > 0 {
		// Steady: one create every 1/rate seconds, on the schedule, not
		// after the previous create returned.
		tick := time.NewTicker(time.Second / time.Duration(rate))
		for i := range works {
			if i > 0 {
				<-tick.C
			}
			creators.Add(1)
			go func() { defer creators.Done(); create(i) }()
		}
		tick.Stop()
	} else {
		jobs := make(chan int)
		for range 8 {
			creators.Add(1)
			go func() {
				defer creators.Done()
				for i := range jobs {
					create(i)
				}
			}()
		}
		for i := range works {
			jobs <- i
		}
		close(jobs)
	}
	creators.Wait()
	createdIn := time.Since(start)

	select {
	case <-allApplied:
	case <-time.After(timeout):
		mu.Lock()
		n := nApplied
		mu.Unlock()
		listed, applied := 0, 0
		if l, err := hubWork.WorkV1().ManifestWorks("").List(ctx, metav1.ListOptions{}); err == nil {
			listed = len(l.Items)
			for _, w := range l.Items {
				if meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied) {
					applied++
				}
			}
		}
		cms := 0
		if l, err := spoke.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: "bench=work"}); err == nil {
			cms = len(l.Items)
		}
		b.Fatalf("after %s only %d of %d works were seen Applied (hub lists %d works, %d Applied; managed cluster has %d ConfigMaps)",
			timeout, n, works, listed, applied, cms)
	}
	total := time.Since(start)
	b.StopTimer()

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)

	mu.Lock()
	defer mu.Unlock()
	var toSpoke, toApplied []time.Duration
	for key, t0 := range created {
		if t, ok := appliedAt[key]; ok {
			toApplied = append(toApplied, t.Sub(t0))
		}
		if t, ok := onSpoke[key]; ok {
			toSpoke = append(toSpoke, t.Sub(t0))
		}
	}
	heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	b.ReportMetric(ms(pct(toSpoke, 50)), "p50-to-cluster-ms")
	b.ReportMetric(ms(pct(toSpoke, 99)), "p99-to-cluster-ms")
	b.ReportMetric(ms(pct(toApplied, 50)), "p50-to-applied-ms")
	b.ReportMetric(ms(pct(toApplied, 99)), "p99-to-applied-ms")
	b.ReportMetric(total.Seconds(), "all-applied-s")
	b.ReportMetric(createdIn.Seconds(), "creates-s")
	if rate > 0 {
		b.ReportMetric(float64(rate), "rate-works/s")
	}
	b.ReportMetric(heap/float64(clusters)/(1<<20), "heap-MiB/agent")
	b.Logf("%d works over %d clusters: created in %s, all Applied in %s", works, clusters, createdIn.Round(time.Millisecond), total.Round(time.Millisecond))
	b.Logf("create -> on cluster: p50 %s p99 %s (n=%d)", pct(toSpoke, 50), pct(toSpoke, 99), len(toSpoke))
	b.Logf("create -> Applied=True: p50 %s p99 %s (n=%d)", pct(toApplied, 50), pct(toApplied, 99), len(toApplied))
	// The timeline of each work: create, agent's watch event, worker start,
	// applied on the cluster, status written, Applied=True seen on the hub.
	tr.mu.Lock()
	segments := []struct {
		name     string
		from, to func(types.NamespacedName) (time.Time, bool)
	}{
		{"create->event", tr.createdOf(created), tr.stage(work.StageEvent)},
		{"event->start", tr.stage(work.StageEvent), tr.stage(work.StageStart)},
		{"start->applied", tr.stage(work.StageStart), tr.stage(work.StageApplied)},
		{"applied->status", tr.stage(work.StageApplied), tr.stage(work.StageStatus)},
		{"status->seen", tr.stage(work.StageStatus), tr.createdOf(appliedAt)},
	}
	for _, seg := range segments {
		var ds []time.Duration
		for key := range created {
			k := types.NamespacedName{Namespace: strings.Split(key, "/")[0], Name: strings.Split(key, "/")[1]}
			from, ok1 := seg.from(k)
			to, ok2 := seg.to(k)
			if ok1 && ok2 {
				ds = append(ds, to.Sub(from))
			}
		}
		b.ReportMetric(ms(pct(ds, 50)), "p50-"+strings.ReplaceAll(seg.name, "->", "-to-")+"-ms")
		b.Logf("trace %-16s p50 %s p99 %s (n=%d)", seg.name, pct(ds, 50), pct(ds, 99), len(ds))
	}
	tr.mu.Unlock()
	b.Logf("Go heap of the %d agents after GC: %.1f MiB (%.1f MiB per agent); process RSS-like Sys %.0f MiB",
		clusters, heap/(1<<20), heap/float64(clusters)/(1<<20), float64(after.Sys)/(1<<20))
}

// tracer keeps the first time each work passed each stage in the agents.
type tracer struct {
	mu sync.Mutex
	at map[types.NamespacedName]map[work.Stage]time.Time
}

func (t *tracer) Trace(w types.NamespacedName, s work.Stage) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.at[w]
	if m == nil {
		m = map[work.Stage]time.Time{}
		t.at[w] = m
	}
	if _, seen := m[s]; !seen {
		m[s] = now
	}
}

// stage reads the time a work passed s (t.mu held).
func (t *tracer) stage(s work.Stage) func(types.NamespacedName) (time.Time, bool) {
	return func(k types.NamespacedName) (time.Time, bool) {
		at, ok := t.at[k][s]
		return at, ok
	}
}

// createdOf reads a time from one of the benchmark's own maps (mu held).
func (t *tracer) createdOf(m map[string]time.Time) func(types.NamespacedName) (time.Time, bool) {
	return func(k types.NamespacedName) (time.Time, bool) {
		at, ok := m[k.Namespace+"/"+k.Name]
		return at, ok
	}
}

// dotToSlash turns the ConfigMap's "work" label "<cluster>.<name>" (labels
// cannot hold "/") into the work key "<cluster>/<name>".
func dotToSlash(label string) string {
	for i := 0; i < len(label); i++ {
		if label[i] == '.' {
			return label[:i] + "/" + label[i+1:]
		}
	}
	return label
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	idx := (len(s)*p+99)/100 - 1
	if idx < 0 {
		idx = 0
	}
	return s[idx].Round(time.Millisecond)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
