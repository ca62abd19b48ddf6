package placement

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/util/wait"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"flotilla.dev/flotilla/hub/placement"
	"flotilla.dev/flotilla/internal/pki"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

const (
	clusters   = 1000
	namespaces = 10
	regions    = 10 // each region holds clusters/regions clusters
)

func BenchmarkPlacement(b *testing.B) {
	sizes := []int{1000, 10000}
	if v := os.Getenv("FLOTILLA_BENCH_PLACEMENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("FLOTILLA_BENCH_PLACEMENTS=%q: %v", v, err)
		}
		sizes = []int{n}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("placements=%d/clusters=%d", n, clusters), func(b *testing.B) {
			for range b.N {
				run(b, n)
			}
		})
	}
}

// run creates the fleet, starts the controllers, creates n placements and waits
// until every one has its decisions.
//
// Placement i selects the clusters of region i%10 (100 clusters, one
// PlacementDecision); every fourth also asks for numberOfClusters=10, which
// exercises the prioritizers (Balance, Steady).
func run(b *testing.B, n int) {
	b.StopTimer()
	log.SetLogger(logr.Discard())
	env := testenv.Start(b, testenv.Options{})
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}

	start := time.Now()
	benchutil.Parallel(b, clusters, func(i int) error {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("cluster-%04d", i),
			Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "bench", "region": fmt.Sprintf("r%d", i%regions)},
		}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
		if err := c.Create(ctx, mc); err != nil {
			return err
		}
		testenv.SetAccepted(mc) // placement decides accepted clusters only
		return c.Status().Update(ctx, mc)
	})
	if err := c.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}); err != nil {
		b.Fatal(err)
	}
	for i := range namespaces {
		ns := fmt.Sprintf("bench-%d", i)
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
		if err := c.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "bench"}}); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("fleet of %d clusters created in %s", clusters, time.Since(start).Round(time.Millisecond))

	skip := true // each size runs its own manager in this process; controller names repeat
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhookServer(b), Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		b.Fatal(err)
	}
	opts := placement.Options{}
	if v := os.Getenv("FLOTILLA_BENCH_WORKERS"); v != "" {
		if opts.Workers, err = strconv.Atoi(v); err != nil {
			b.Fatalf("FLOTILLA_BENCH_WORKERS=%q: %v", v, err)
		}
	}
	if err := placement.Setup(mgr, opts); err != nil {
		b.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		b.Fatalf("manager did not start: %v", <-stopped)
	}

	// Watch placements through an informer so that waiting costs the apiserver nothing.
	watcher, err := cache.New(cfg, cache.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	for _, obj := range []client.Object{&clusterv1beta1.Placement{}, &clusterv1beta1.PlacementDecision{}} {
		if _, err := watcher.GetInformer(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
	go func() { _ = watcher.Start(ctx) }()
	watcher.WaitForCacheSync(ctx)

	b.StartTimer()
	cpuBefore := cpuTime()
	start = time.Now()
	benchutil.Parallel(b, n, func(i int) error {
		p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Namespace: fmt.Sprintf("bench-%d", i%namespaces)},
			Spec: clusterv1beta1.PlacementSpec{Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": fmt.Sprintf("r%d", i%regions)}}}}}}}
		if i%4 == 0 {
			ten := int32(10)
			p.Spec.NumberOfClusters = &ten
		}
		return c.Create(ctx, p)
	})
	created := time.Since(start)
	b.Logf("%d placements created in %s", n, created.Round(time.Millisecond))

	// Wait until every placement reports the expected number of clusters.
	lastReport := time.Now()
	// Listing from the informer still copies every item: a 1 s poll keeps it cheap.
	err = wait.PollUntilContextTimeout(ctx, time.Second, 40*time.Minute, true, func(ctx context.Context) (bool, error) {
		done := scheduled(ctx, b, watcher)
		if done == n {
			return true, nil
		}
		select {
		case err := <-stopped:
			return false, fmt.Errorf("controllers stopped: %v", err)
		default:
		}
		if time.Since(lastReport) > 10*time.Second {
			fmt.Fprintf(os.Stderr, "    %d of %d placements decided after %s\n", done, n, time.Since(start).Round(time.Second))
			lastReport = time.Now()
		}
		return false, nil
	})
	if err != nil {
		b.Fatalf("only %d of %d placements scheduled after %s: %v", scheduled(ctx, b, watcher), n, time.Since(start), err)
	}
	elapsed := time.Since(start)
	cpu := cpuTime() - cpuBefore
	b.StopTimer()

	// Propagation: move one cluster from region r0 to r1; every placement of those
	// regions without numberOfClusters must follow.
	b.StartTimer()
	moved := time.Now()
	var mc clusterv1.ManagedCluster
	if err := c.Get(ctx, client.ObjectKey{Name: "cluster-0000"}, &mc); err != nil {
		b.Fatal(err)
	}
	patch := client.MergeFrom(mc.DeepCopy())
	mc.Labels["region"] = "r1"
	if err := c.Patch(ctx, &mc, patch); err != nil {
		b.Fatal(err)
	}
	affected := n / regions * 2 * 3 / 4 // regions r0 and r1, placements without numberOfClusters
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 20*time.Minute, true, func(ctx context.Context) (bool, error) {
		return followed(ctx, b, watcher, "cluster-0000") >= affected, nil
	}); err != nil {
		b.Fatalf("placements did not follow a label change within 20 minutes: %v", err)
	}
	propagation := time.Since(moved)
	b.StopTimer()
	b.ReportMetric(propagation.Seconds(), "s-label-change-to-decisions")
	b.Logf("one cluster moved between regions: all %d affected placements followed in %s", affected, propagation.Round(time.Millisecond))

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss := map[string]int64{}
	for _, pid := range env.PIDs() {
		name, kb := procRSS(pid)
		rss[name] += kb
	}
	b.ReportMetric(elapsed.Seconds(), "s-to-all-decisions")
	b.ReportMetric(float64(n)/elapsed.Seconds(), "placements/s")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "controller-heap-MB")
	b.ReportMetric(cpu.Seconds(), "controller-CPU-s")
	b.ReportMetric(float64(rss["kube-apiserver"])/1024, "apiserver-RSS-MB")
	b.ReportMetric(float64(rss["etcd"])/1024, "etcd-RSS-MB")
	b.Logf("all %d placements decided %s after the first was created (creation took %s); benchmark process CPU %s; controller heap %.0f MB, apiserver RSS %.0f MB, etcd RSS %.0f MB",
		n, elapsed.Round(time.Millisecond), created.Round(time.Millisecond), cpu.Round(time.Millisecond),
		float64(ms.HeapInuse)/(1<<20), float64(rss["kube-apiserver"])/1024, float64(rss["etcd"])/1024)
}

// followed counts placements without numberOfClusters that reflect cluster having
// moved from region r0 to r1: r0 placements no longer decide on it, r1 ones do.
func followed(ctx context.Context, b *testing.B, r client.Reader, cluster string) int {
	var ds clusterv1beta1.PlacementDecisionList
	if err := r.List(ctx, &ds, client.UnsafeDisableDeepCopy); err != nil {
		b.Logf("list decisions: %v", err)
		return 0
	}
	has := map[string]bool{}
	for _, d := range ds.Items {
		for _, cd := range d.Status.Decisions {
			if cd.ClusterName == cluster {
				has[d.Namespace+"/"+d.Labels[clusterv1beta1.PlacementLabel]] = true
			}
		}
	}
	var ps clusterv1beta1.PlacementList
	if err := r.List(ctx, &ps, client.UnsafeDisableDeepCopy); err != nil {
		return 0
	}
	ok := 0
	for _, p := range ps.Items {
		if p.Spec.NumberOfClusters != nil || len(p.Spec.Predicates) == 0 {
			continue
		}
		switch p.Spec.Predicates[0].RequiredClusterSelector.LabelSelector.MatchLabels["region"] {
		case "r0":
			if !has[p.Namespace+"/"+p.Name] {
				ok++
			}
		case "r1":
			if has[p.Namespace+"/"+p.Name] {
				ok++
			}
		}
	}
	return ok
}

// webhookServer serves the placement admission handler on a free local port with a
// throwaway certificate (nothing calls it in the benchmark, but Setup registers it).
func webhookServer(b *testing.B) webhook.Server {
	ca, err := pki.NewCA("bench", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	kp, err := ca.Issue(pki.CertRequest{CommonName: "127.0.0.1", IPs: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := pki.WriteFiles(dir, "tls", kp.CertPEM, kp.KeyPEM); err != nil {
		b.Fatal(err)
	}
	return webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: freePort(b), CertDir: dir})
}

func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// scheduled counts placements whose status shows the expected selection.
func scheduled(ctx context.Context, b *testing.B, c client.Reader) int {
	var list clusterv1beta1.PlacementList
	if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		b.Logf("list placements: %v", err)
		return 0
	}
	done := 0
	for _, p := range list.Items {
		want := int32(clusters / regions)
		if p.Spec.NumberOfClusters != nil {
			want = *p.Spec.NumberOfClusters
		}
		if p.Status.NumberOfSelectedClusters == want && len(p.Status.DecisionGroups) == 1 && len(p.Status.DecisionGroups[0].Decisions) == 1 {
			done++
		}
	}
	return done
}

// procRSS returns a process's command name and resident set in KiB.
func procRSS(pid int) (string, int64) {
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return strings.TrimSpace(string(comm)), 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return strings.TrimSpace(string(comm)), kb
		}
	}
	return strings.TrimSpace(string(comm)), 0
}

// cpuTime is the user+system CPU this process has used: the controllers, plus the
// benchmark's own client and informer.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
