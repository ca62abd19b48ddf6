package scale

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/hub/registration/bootstrap"
	"flotilla.dev/flotilla/internal/controlplane"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/klusterlet/registration"
	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

const policyNS = "policies"

type knobs struct {
	clusters, spokes, policies int
	steady, statusInterval     time.Duration
	addonInterval              time.Duration
	hubArgs                    []string
	heapProfile, cpuProfile    string
	apiHeapProfile             string
}

func readKnobs(b *testing.B) knobs {
	k := knobs{
		clusters:       benchutil.EnvInt(b, "FLOTILLA_BENCH_CLUSTERS", 200, 1),
		spokes:         benchutil.EnvInt(b, "FLOTILLA_BENCH_SPOKES", 2, 1),
		policies:       benchutil.EnvInt(b, "FLOTILLA_BENCH_POLICIES", 10, 1),
		steady:         benchutil.EnvDuration(b, "FLOTILLA_BENCH_STEADY", 90*time.Second),
		statusInterval: benchutil.EnvDuration(b, "FLOTILLA_BENCH_STATUS_INTERVAL", time.Minute),
		addonInterval:  benchutil.EnvDuration(b, "FLOTILLA_BENCH_ADDON_INTERVAL", time.Minute),
		hubArgs:        strings.Fields(os.Getenv("FLOTILLA_BENCH_HUB_ARGS")),
		heapProfile:    os.Getenv("FLOTILLA_BENCH_HEAP_PROFILE"),
		cpuProfile:     os.Getenv("FLOTILLA_BENCH_CPU_PROFILE"),
		apiHeapProfile: os.Getenv("FLOTILLA_BENCH_APISERVER_HEAP_PROFILE"),
	}
	return k
}

// BenchmarkFleet joins the fleet, gives every cluster one ManifestWork and
// the policies, watches the settled hub for the steady window and checks the
// fleet stayed correct.
func BenchmarkFleet(b *testing.B) {
	k := readKnobs(b)
	quiet(b)
	b.Run(fmt.Sprintf("clusters=%d/spokes=%d/policies=%d", k.clusters, k.spokes, k.policies), func(b *testing.B) {
		for range b.N {
			runFleet(b, k)
		}
	})
}

// quiet silences klog (5,000 agents log), errors included.
func quiet(b *testing.B) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	must(b, fs.Set("logtostderr", "false"))
	must(b, fs.Set("stderrthreshold", "FATAL"))
	klog.SetOutput(discard{})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func clusterName(i int) string { return fmt.Sprintf("sim-%05d", i) }

func runFleet(b *testing.B, k knobs) {
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if k.apiHeapProfile != "" {
		b.Setenv(controlplane.EnvAPIServerProfiling, "true")
	}
	env := testenv.Start(b, testenv.Options{Clusters: k.spokes})
	tok, err := bootstrap.Init(ctx, bootstrap.Options{Config: env.Hub.Config, TokenTTL: 6 * time.Hour})
	must(b, err)
	admin := rest.CopyConfig(env.Hub.Config)
	admin.QPS, admin.Burst = 2000, 4000
	c, err := client.NewWithWatch(admin, client.Options{Scheme: scheme.New()})
	must(b, err)

	// The hub: the real process, approving the bootstrap identity's first CSRs
	// and accepting its clusters (a fleet joining on its own, no `accept` per cluster).
	args := append([]string{"--auto-approve-users", ocm.BootstrapServiceAccountUser(), "--data-dir", b.TempDir()}, k.hubArgs...)
	pprofAddr := ""
	if k.heapProfile != "" || k.cpuProfile != "" {
		pprofAddr = fmt.Sprintf("127.0.0.1:%d", freePort(b))
		args = append(args, "--pprof-bind-address", pprofAddr)
	}
	pid := benchutil.StartHub(b, ctx, env, args...)
	benchutil.WaitHub(b, ctx, env)
	hubPIDs := env.Hub.PIDs()
	// What the hub apiserver holds before any cluster: subtracted at the end.
	storedBase, err := benchutil.ReadStored(ctx, admin)
	must(b, err)

	fleet := watchFleet(ctx, b, admin)
	tallies := watchTallies(ctx, b, c, k.clusters)
	apiPID := hubPIDs["kube-apiserver"]
	apiPhase := func(phase string) { // the hub apiserver's RSS and peak so far, and its Go heap, at the end of each phase
		rss, hwm := benchutil.Memory(apiPID)
		m, err := benchutil.PlainMetrics(ctx, admin, "go_memstats_heap_alloc_bytes", "go_memstats_heap_inuse_bytes",
			"go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes", "go_memstats_stack_inuse_bytes", "go_goroutines")
		if err != nil {
			b.Logf("hub apiserver metrics: %v", err)
		}
		mib := func(k string) float64 { return m[k] / (1 << 20) }
		if k.apiHeapProfile != "" && phase != "start" {
			saveAPIServerHeap(b, ctx, admin, k.apiHeapProfile+"."+strings.ReplaceAll(phase, " ", "-"))
		}
		fmt.Printf("hub kube-apiserver after %s: RSS %.0f MiB, peak %.0f MiB; Go heap alloc %.0f MiB, in use %.0f MiB, idle %.0f MiB (released %.0f), stacks %.0f MiB, %.0f goroutines; CPU since its start %.1fs\n",
			phase, rss, hwm, mib("go_memstats_heap_alloc_bytes"), mib("go_memstats_heap_inuse_bytes"), mib("go_memstats_heap_idle_bytes"),
			mib("go_memstats_heap_released_bytes"), mib("go_memstats_stack_inuse_bytes"), m["go_goroutines"], benchutil.CPU(apiPID).Seconds())
	}
	apiPhase("start")
	peak := samplePeak(ctx, pid)

	// The managed side: each cluster's agent namespace and ClusterClaims on
	// its shared apiserver.
	spokeClients := make([]client.Client, k.spokes)
	for s := range spokeClients {
		cfg := rest.CopyConfig(env.Clusters[s].Config)
		cfg.QPS, cfg.Burst = 2000, 4000
		spokeClients[s], err = client.New(cfg, client.Options{Scheme: scheme.New()})
		must(b, err)
	}
	benchutil.Parallel(b, k.clusters, func(i int) error {
		name, sc := clusterName(i), spokeClients[i%k.spokes]
		if err := sc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agent-" + name}}); err != nil {
			return err
		}
		for claim, value := range claimsFor(i) {
			if err := sc.Create(ctx, &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: name + "." + claim,
				Labels: map[string]string{clusterLabel: name}}, Spec: clusterv1alpha1.ClusterClaimSpec{Value: value}}); err != nil {
				return err
			}
		}
		return nil
	})
	bootstrapKC, err := registration.BootstrapKubeconfig(env.Hub.URL, env.Hub.CAPEM, tok.Token)
	must(b, err)

	// Join: every agent starts at once; the clock runs until every cluster is
	// Joined and Available on the hub.
	cpu0 := benchutil.CPU(pid)
	workErrs := make(chan error, 16)
	var agents sync.WaitGroup
	defer agents.Wait()
	defer cancel()
	start := time.Now()
	b.StartTimer()
	for i := range k.clusters {
		name := clusterName(i)
		agent, err := registration.New(registration.Options{
			ClusterName:         name,
			AgentNamespace:      "agent-" + name,
			BootstrapKubeconfig: bootstrapKC,
			SpokeConfig:         ownClaims(env.Clusters[i%k.spokes].Config, name),
			HubKubeconfigDir:    b.TempDir(),
			StatusSyncInterval:  k.statusInterval,
			AddonSyncInterval:   k.addonInterval,
		})
		must(b, err)
		agents.Add(2)
		go func() { defer agents.Done(); _ = agent.Run(ctx) }()
		go func() {
			defer agents.Done()
			hub, _, err := agent.WaitJoined(ctx)
			if err != nil {
				return
			}
			playWorkAgent(ctx, hub, name, workErrs)
		}()
	}
	waitFor(b, ctx, 2*time.Hour, func() bool { return fleet.count(joined) == k.clusters }, "every cluster Joined", fleet.progress)
	allJoined := time.Since(start)
	waitFor(b, ctx, 2*time.Hour, func() bool { return fleet.count(available) == k.clusters }, "every cluster Available", fleet.progress)
	allAvailable := time.Since(start)
	b.Logf("%d clusters: all Joined after %s, all Available after %s (p50 Joined %s, p99 %s); hub CPU %s",
		k.clusters, allJoined.Round(time.Millisecond), allAvailable.Round(time.Millisecond),
		fleet.percentile(joined, start, 50), fleet.percentile(joined, start, 99), (benchutil.CPU(pid) - cpu0).Round(time.Millisecond))
	apiPhase("join")

	// Work: one ManifestWork per cluster, until every one is Applied.
	workStart := time.Now()
	var workRetries atomic.Int64
	benchutil.Parallel(b, k.clusters, func(i int) error {
		return createRetrying(ctx, c, manifestWork(clusterName(i)), &workRetries)
	})
	worksCreated := time.Since(workStart)
	waitFor(b, ctx, time.Hour, func() bool { return tallies.applied.count() == k.clusters }, "every ManifestWork Applied",
		func() string { return fmt.Sprintf("%d of %d works Applied", tallies.applied.count(), k.clusters) })
	worksApplied := time.Since(workStart)
	b.Logf("%d works: created in %s (%d creates retried after a timeout or a busy answer), all Applied after %s",
		k.clusters, worksCreated.Round(time.Millisecond), workRetries.Load(), worksApplied.Round(time.Millisecond))
	apiPhase("works")

	// Governance: the policies on every cluster, until every root lists every
	// cluster (written after its replicas) and every replica is there.
	policyStart := time.Now()
	createPolicies(b, ctx, c, k.policies)
	waitFor(b, ctx, 2*time.Hour, func() bool { return tallies.roots.count() == k.policies }, "every root policy lists every cluster",
		func() string {
			return fmt.Sprintf("%d of %d roots complete, %d replicas", tallies.roots.count(), k.policies, tallies.replicas.total())
		})
	propagated := time.Since(policyStart)
	replicas := countReplicas(ctx, c)
	b.Logf("%d policies: %d replicas after %s (%.0f replicas/s)", k.policies, replicas, propagated.Round(time.Millisecond), float64(replicas)/propagated.Seconds())
	apiPhase("replicas")
	b.StopTimer()
	settleCPU := benchutil.CPU(pid) - cpu0

	// The steady window: nothing changes but the heartbeats.
	fleet.steady.Store(true)
	leases0, flaps0 := fleet.leaseWrites.Load(), fleet.flaps.Load()
	req0 := apiserverRequests(ctx, b, env.Hub.Config)
	cpuSteady0 := benchutil.CPU(pid)
	var rss []float64
	cpuProfiled := make(chan struct{})
	if k.cpuProfile != "" { // the hub's CPU over the steady window
		go func() {
			defer close(cpuProfiled)
			saveProfile(b, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofAddr, int(k.steady.Seconds())), k.cpuProfile)
		}()
	} else {
		close(cpuProfiled)
	}
	tick := time.NewTicker(time.Second)
	window := time.After(k.steady)
	for done := false; !done; {
		select {
		case <-tick.C:
			r, _ := benchutil.Memory(pid)
			rss = append(rss, r)
		case <-window:
			done = true
		}
	}
	tick.Stop()
	<-cpuProfiled
	steadyCores := (benchutil.CPU(pid) - cpuSteady0).Seconds() / k.steady.Seconds()
	leaseRate := float64(fleet.leaseWrites.Load()-leases0) / k.steady.Seconds()
	reqRate := float64(apiserverRequests(ctx, b, env.Hub.Config)-req0) / k.steady.Seconds()
	flaps := fleet.flaps.Load() - flaps0
	fleet.steady.Store(false)
	steadyRSS := rss[len(rss)-1]
	_, hwm := benchutil.Memory(pid)
	hubPeak := max(peak(), hwm)
	apiRSS, _ := benchutil.Memory(hubPIDs["kube-apiserver"])
	etcdRSS, _ := benchutil.Memory(hubPIDs["etcd"])
	var spokeAPI float64
	for _, cp := range env.Clusters {
		r, _ := benchutil.Memory(cp.PIDs()["kube-apiserver"])
		spokeAPI += r
	}
	self, _ := benchutil.Memory(os.Getpid())
	apiPhase("steady window")
	fmt.Printf("hub apiserver: %d established client connections\n", connectionsTo(env.Hub.Ports.APIServer))
	logStored(b, ctx, admin, storedBase, k.clusters)
	if k.heapProfile != "" {
		saveProfile(b, "http://"+pprofAddr+"/debug/pprof/heap?gc=1", k.heapProfile)
	}

	// Still correct: every cluster Available, none left True in the window,
	// every work Applied, every replica present.
	select {
	case err := <-workErrs:
		b.Errorf("stand-in work agent: %v", err)
	default:
	}
	if n := fleet.count(available); n != k.clusters {
		b.Errorf("%d of %d clusters Available at the end", n, k.clusters)
	}
	if flaps > 0 {
		b.Errorf("%d Available transitions away from True in the steady window (%s)", flaps, fleet.flapped())
	}
	if n := appliedWorks(ctx, c); n != k.clusters {
		b.Errorf("%d of %d works Applied at the end", n, k.clusters)
	}
	if n := countReplicas(ctx, c); n != k.policies*k.clusters {
		b.Errorf("%d replicas at the end, want %d", n, k.policies*k.clusters)
	}

	b.ReportMetric(allJoined.Seconds(), "s-all-joined")
	b.ReportMetric(allAvailable.Seconds(), "s-all-available")
	b.ReportMetric(worksApplied.Seconds(), "s-works-applied")
	b.ReportMetric(propagated.Seconds(), "s-replicas")
	b.ReportMetric(settleCPU.Seconds(), "s-hub-cpu-to-settle")
	b.ReportMetric(steadyCores, "hub-cores-steady")
	b.ReportMetric(steadyRSS, "MiB-hub-steady-rss")
	b.ReportMetric(hubPeak, "MiB-hub-peak-rss")
	b.ReportMetric(apiRSS, "MiB-apiserver-rss")
	b.ReportMetric(etcdRSS, "MiB-etcd-rss")
	b.ReportMetric(leaseRate, "lease-writes/s")
	b.ReportMetric(reqRate, "apiserver-requests/s")
	b.ReportMetric(float64(flaps), "flaps")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.Logf("steady %s: hub %.3f cores, RSS %.0f MiB (peak %.0f MiB); hub kube-apiserver RSS %.0f MiB, etcd %.0f MiB; "+
		"managed apiservers %.0f MiB together; %.1f lease writes/s, %.0f hub apiserver requests/s; %d flaps; "+
		"benchmark process (agents) RSS %.0f MiB, heap %.0f MiB, %d goroutines; load %s",
		k.steady, steadyCores, steadyRSS, hubPeak, apiRSS, etcdRSS, spokeAPI, leaseRate, reqRate, flaps,
		self, float64(ms.HeapInuse)/(1<<20), runtime.NumGoroutine(), loadavg())
}

// logStored logs what the hub apiserver holds beyond base (before any
// cluster), per resource and per cluster, with its watch caches' capacities
// and its own count of stored objects.
func logStored(b *testing.B, ctx context.Context, cfg *rest.Config, base benchutil.Stored, clusters int) {
	stored, err := benchutil.ReadStored(ctx, cfg)
	if err != nil {
		b.Errorf("read what the hub apiserver stores: %v", err)
		return
	}
	if dir := os.Getenv("FLOTILLA_BENCH_STORED_SAMPLES"); dir != "" {
		if err := stored.WriteLargest(dir); err != nil {
			b.Errorf("write the largest stored objects: %v", err)
		}
	}
	capacity, err := benchutil.ResourceMetric(ctx, cfg, "watch_cache_capacity")
	if err != nil {
		b.Logf("watch cache capacities: %v", err)
	}
	// To stdout: a benchmark's log keeps only its first lines.
	fmt.Printf("hub apiserver, stored beyond a hub without clusters, JSON as listed (wcache: watch cache capacity, events):\n%s",
		stored.Minus(base).Table(clusters, capacity))
	if watches, err := benchutil.ResourceMetric(ctx, cfg, "apiserver_longrunning_requests"); err == nil {
		fmt.Printf("hub apiserver long-running requests (watches) by resource: %v\n", watches)
	}
	if objects, err := benchutil.ResourceMetric(ctx, cfg, "apiserver_storage_objects"); err == nil {
		var total float64
		for _, v := range objects {
			total += v
		}
		fmt.Printf("hub apiserver_storage_objects: %.0f in all\n", total)
	}
	b.ReportMetric(float64(stored.Minus(base).Total().Bytes)/float64(clusters), "stored-bytes/cluster")
	b.ReportMetric(float64(stored.Minus(base).Total().Objects)/float64(clusters), "stored-objects/cluster")
}

// saveAPIServerHeap writes the hub kube-apiserver's heap profile (after a
// GC) to file.
func saveAPIServerHeap(b *testing.B, ctx context.Context, cfg *rest.Config, file string) {
	raw, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx)
	if err != nil {
		b.Errorf("hub apiserver heap profile: %v", err)
		return
	}
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		b.Errorf("hub apiserver heap profile: %v", err)
		return
	}
	b.Logf("hub apiserver heap profile in %s (go tool pprof -top %s)", file, file)
	if m, err := benchutil.RawMetrics(ctx, cfg); err == nil {
		_ = os.WriteFile(file+".metrics", m, 0o644)
	}
}

// connectionsTo counts the established TCP connections to local port (the
// server's side of each, from /proc/net/tcp and tcp6).
func connectionsTo(port int) int {
	n := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 4 || fs[3] != "01" { // 01: ESTABLISHED
				continue
			}
			_, hexPort, _ := strings.Cut(fs[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil && int(p) == port {
				n++
			}
		}
	}
	return n
}

// claimsFor is cluster i's ClusterClaims (reserved and custom).
func claimsFor(i int) map[string]string {
	return map[string]string{
		"id.k8s.io":                           clusterName(i),
		"platform.open-cluster-management.io": "Other",
		"region.bench.flotilla.dev":           fmt.Sprintf("r%d", i%10),
	}
}

func manifestWork(cluster string) *workv1.ManifestWork {
	cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench","namespace":"default"},"data":{"cluster":%q}}`, cluster)
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: cluster},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: k8sruntime.RawExtension{Raw: []byte(cm)}}}}}}
}

// appliedWorks lists the works (once, at the end) and counts the Applied ones.
func appliedWorks(ctx context.Context, c client.Client) int {
	var l workv1.ManifestWorkList
	if c.List(ctx, &l) != nil {
		return -1
	}
	n := 0
	for i := range l.Items {
		if workApplied(&l.Items[i]) {
			n++
		}
	}
	return n
}

func workApplied(w *workv1.ManifestWork) bool {
	return meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied)
}

// createPolicies places n policy-collection-style policies on every cluster
// (the built-in `global` set), one PlacementBinding each.
func createPolicies(b *testing.B, ctx context.Context, c client.Client, n int) {
	must(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: policyNS}}))
	must(b, c.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "global", Namespace: policyNS},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"}}))
	must(b, c.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: policyNS},
		Spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{"global"}}}))
	benchutil.Parallel(b, n, func(i int) error {
		return benchutil.CreateBoundPolicy(ctx, c, policyNS, fmt.Sprintf("policy-%02d", i), i)
	})
}

// createRetrying creates obj as a careful client does: a timeout, a busy
// answer (429) or a server error is tried again, up to five times with
// backoff, and AlreadyExists after such an answer means the first try was
// stored. retries counts the tries again.
func createRetrying(ctx context.Context, c client.Client, obj client.Object, retries *atomic.Int64) error {
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 5}
	var last error // the last answer tried again after; nil before any
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, obj.DeepCopyObject().(client.Object))
		switch {
		case err == nil, last != nil && apierrors.IsAlreadyExists(err):
			return true, nil
		case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), apierrors.IsTooManyRequests(err),
			apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err):
			last = err
			retries.Add(1)
			return false, nil
		default:
			return false, err
		}
	})
	if wait.Interrupted(err) && last != nil {
		return fmt.Errorf("create %s/%s: %w", obj.GetNamespace(), obj.GetName(), last)
	}
	return err
}

func countReplicas(ctx context.Context, c client.Client) int {
	n, cont := 0, ""
	for {
		var l metav1.PartialObjectMetadataList
		l.SetGroupVersionKind(policyv1.GroupVersion.WithKind("PolicyList"))
		if err := c.List(ctx, &l, client.HasLabels{policyv1.RootPolicyLabel}, client.Limit(5000), client.Continue(cont)); err != nil {
			return -1
		}
		n += len(l.Items)
		if cont = l.Continue; cont == "" {
			return n
		}
	}
}

// fleet follows every ManagedCluster and cluster lease on the hub through
// informers (no polling of the apiserver).
type fleet struct {
	mu        sync.Mutex
	joinedAt  map[string]time.Time
	available map[string]bool
	flappedBy map[string]int

	steady      atomic.Bool
	flaps       atomic.Int64
	leaseWrites atomic.Int64
}

type state int

const (
	joined state = iota
	available
)

func watchFleet(ctx context.Context, b *testing.B, cfg *rest.Config) *fleet {
	f := &fleet{joinedAt: map[string]time.Time{}, available: map[string]bool{}, flappedBy: map[string]int{}}
	cs := clusterclient.NewForConfigOrDie(cfg)
	mcs := cs.ClusterV1().ManagedClusters()
	observe := func(obj any) {
		mc, ok := obj.(*clusterv1.ManagedCluster)
		if !ok {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, seen := f.joinedAt[mc.Name]; !seen && meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) {
			f.joinedAt[mc.Name] = time.Now()
		}
		now := meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
		if f.available[mc.Name] && !now && f.steady.Load() {
			f.flaps.Add(1)
			f.flappedBy[mc.Name]++
		}
		f.available[mc.Name] = now
	}
	_, inf := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) { return mcs.List(ctx, o) },
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return mcs.Watch(ctx, o)
			},
		},
		ObjectType: &clusterv1.ManagedCluster{},
		Handler:    cache.ResourceEventHandlerFuncs{AddFunc: observe, UpdateFunc: func(_, n any) { observe(n) }},
	})
	go inf.RunWithContext(ctx)

	leases := kubernetes.NewForConfigOrDie(cfg).CoordinationV1().Leases(metav1.NamespaceAll)
	byName := fields.OneTermEqualSelector("metadata.name", registration.LeaseName).String()
	_, linf := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) {
				o.FieldSelector = byName
				return leases.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = byName
				return leases.Watch(ctx, o)
			},
		},
		ObjectType: &coordinationv1.Lease{},
		Handler: cache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
			if o.(*coordinationv1.Lease).ResourceVersion != n.(*coordinationv1.Lease).ResourceVersion {
				f.leaseWrites.Add(1)
			}
		}},
	})
	go linf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, linf.HasSynced) {
		b.Fatal("fleet informers did not sync")
	}
	return f
}

func (f *fleet) count(s state) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s == joined {
		return len(f.joinedAt)
	}
	n := 0
	for _, ok := range f.available {
		if ok {
			n++
		}
	}
	return n
}

func (f *fleet) progress() string {
	return fmt.Sprintf("%d Joined, %d Available", f.count(joined), f.count(available))
}

// percentile of the time from start to Joined.
func (f *fleet) percentile(_ state, start time.Time, p int) time.Duration {
	f.mu.Lock()
	var d []time.Duration
	for _, t := range f.joinedAt {
		d = append(d, t.Sub(start))
	}
	f.mu.Unlock()
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	rank := max((p*len(d)+99)/100, 1)
	return d[rank-1].Round(time.Millisecond)
}

func (f *fleet) flapped() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for n := range f.flappedBy {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > 10 {
		names = append(names[:10], "...")
	}
	return strings.Join(names, ", ")
}

// samplePeak samples the process's RSS every 250ms until ctx ends and returns
// a reader of the highest seen.
func samplePeak(ctx context.Context, pid int) func() float64 {
	var mu sync.Mutex
	var peak float64
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r, _ := benchutil.Memory(pid)
				mu.Lock()
				peak = max(peak, r)
				mu.Unlock()
			}
		}
	}()
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// apiserverRequests is the hub apiserver's apiserver_request_total, summed.
func apiserverRequests(ctx context.Context, b *testing.B, cfg *rest.Config) float64 {
	raw, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		b.Logf("read the apiserver's metrics: %v", err)
		return 0
	}
	var sum float64
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}

func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	return strings.Join(f[:3], " ")
}

func waitFor(b *testing.B, ctx context.Context, limit time.Duration, ok func() bool, what string, progress func() string) {
	b.Helper()
	if err := wait.PollUntilContextTimeout(ctx, time.Second, limit, true, func(context.Context) (bool, error) { return ok(), nil }); err != nil {
		b.Fatalf("%s: not within %s (%s)", what, limit, progress())
	}
}

func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(b, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// saveProfile writes the hub's profile at url to file.
func saveProfile(b *testing.B, url, file string) {
	resp, err := http.Get(url)
	if err != nil {
		b.Errorf("hub profile %s: %v", url, err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		b.Errorf("hub profile: %v", err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		b.Errorf("hub profile %s: %v", url, err)
		return
	}
	b.Logf("hub profile in %s (go tool pprof -top %s)", file, file)
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
