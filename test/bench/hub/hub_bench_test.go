package hub

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub/registration/bootstrap"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

const (
	namespaces = 10
	regions    = 10
	// steady is how long the hub is watched once the fleet is settled.
	steady = 20 * time.Second
)

func size(b *testing.B, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("%s=%q: %v", name, v, err)
		}
		return n
	}
	return def
}

// BenchmarkHubMemory runs `flotilla hub` as its own process while a fleet of
// accepted ManagedClusters (the hub makes each one's namespace and RBAC) and
// Placements over them (as the placement benchmark: placement i selects
// region i%10, every fourth with numberOfClusters 10) is created, waits until
// the hub has done all of it, and reports the hub's peak RSS, its RSS and CPU
// over a steady window afterwards.
func BenchmarkHubMemory(b *testing.B) {
	clusters := size(b, "FLOTILLA_BENCH_CLUSTERS", 1000)
	placements := size(b, "FLOTILLA_BENCH_PLACEMENTS", 1000)
	b.Run(fmt.Sprintf("clusters=%d/placements=%d", clusters, placements), func(b *testing.B) {
		for range b.N {
			run(b, clusters, placements)
		}
	})
}

func run(b *testing.B, clusters, placements int) {
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(b, testenv.Options{})
	if _, err := bootstrap.Init(ctx, bootstrap.Options{Config: env.Hub.Config}); err != nil {
		b.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	var hubArgs []string
	profile := os.Getenv("FLOTILLA_BENCH_HEAP_PROFILE") // a file: the hub's heap profile at the end
	pprofAddr := ""
	if profile != "" {
		pprofAddr = fmt.Sprintf("127.0.0.1:%d", freePort(b))
		hubArgs = append(hubArgs, "--pprof-bind-address", pprofAddr)
	}
	pid := benchutil.StartHub(b, ctx, env, hubArgs...)
	benchutil.WaitHub(b, ctx, env)

	var mu sync.Mutex
	var peak float64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the peak over the whole run (VmHWM also counts start-up)
		defer close(sampled)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				rss, _ := benchutil.Memory(pid)
				mu.Lock()
				peak = max(peak, rss)
				mu.Unlock()
			}
		}
	}()

	b.StartTimer()
	start := time.Now()
	cpuStart := benchutil.CPU(pid)
	must(b, c.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}))
	for i := range namespaces {
		ns := fmt.Sprintf("bench-%d", i)
		must(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		must(b, c.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "bench"}}))
	}
	benchutil.Parallel(b, clusters, func(i int) error {
		return c.Create(ctx, &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cluster-%04d", i),
				Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "bench", "region": fmt.Sprintf("r%d", i%regions)}},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true, LeaseDurationSeconds: 60}})
	})
	benchutil.Parallel(b, placements, func(i int) error {
		p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Namespace: fmt.Sprintf("bench-%d", i%namespaces)},
			Spec: clusterv1beta1.PlacementSpec{Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": fmt.Sprintf("r%d", i%regions)}}}}},
				// The clusters have no agents: once their lease grace ends they are tainted.
				Tolerations: []clusterv1beta1.Toleration{{Key: clusterv1.ManagedClusterTaintUnreachable, Operator: clusterv1beta1.TolerationOpExists},
					{Key: clusterv1.ManagedClusterTaintUnavailable, Operator: clusterv1beta1.TolerationOpExists}}}}
		if i%4 == 0 {
			ten := int32(10)
			p.Spec.NumberOfClusters = &ten
		}
		return c.Create(ctx, p)
	})
	created := time.Since(start)

	// Done: every cluster has its namespace (made by the hub on accept) and every
	// placement its selection.
	perPlacement := clusters / regions
	err = wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Minute, true, func(ctx context.Context) (bool, error) {
		var nss corev1.NamespaceList
		if err := c.List(ctx, &nss); err != nil {
			return false, nil
		}
		ready := 0
		for _, ns := range nss.Items {
			if strings.HasPrefix(ns.Name, "cluster-") {
				ready++
			}
		}
		if ready < clusters {
			return false, nil
		}
		var ps clusterv1beta1.PlacementList
		if err := c.List(ctx, &ps); err != nil {
			return false, nil
		}
		decided := 0
		for _, p := range ps.Items {
			want := perPlacement
			if p.Spec.NumberOfClusters != nil {
				want = min(want, int(*p.Spec.NumberOfClusters))
			}
			if int(p.Status.NumberOfSelectedClusters) == want {
				decided++
			}
		}
		return decided == placements, nil
	})
	if err != nil {
		b.Fatalf("the hub did not settle: %v", err)
	}
	settled := time.Since(start)
	b.StopTimer()
	cpuSettled := benchutil.CPU(pid) - cpuStart

	// The steady window: nothing changes; what does the hub hold and spend?
	steadyCPU := benchutil.CPU(pid)
	var rss []float64
	sample := time.NewTicker(time.Second)
	window := time.After(steady) // a fixed window, sampled each second
	for done := false; !done; {
		select {
		case <-sample.C:
			r, _ := benchutil.Memory(pid)
			rss = append(rss, r)
		case <-window:
			done = true
		}
	}
	sample.Stop()
	steadyCPU = benchutil.CPU(pid) - steadyCPU
	close(stopSampling)
	<-sampled
	_, hwm := benchutil.Memory(pid)
	mu.Lock()
	peak = max(peak, hwm)
	mu.Unlock()
	last := rss[len(rss)-1]
	anon, file, _ := benchutil.MemoryParts(pid)
	b.ReportMetric(anon, "MiB-hub-anon-rss")
	b.ReportMetric(file, "MiB-hub-file-rss")
	if profile != "" {
		saveHeapProfile(b, "http://"+pprofAddr+"/debug/pprof/heap?gc=1", profile)
	}

	b.ReportMetric(settled.Seconds(), "s-to-settled")
	b.ReportMetric(peak, "MiB-hub-peak-rss")
	b.ReportMetric(last, "MiB-hub-steady-rss")
	b.ReportMetric(cpuSettled.Seconds(), "s-hub-cpu-to-settled")
	b.ReportMetric(steadyCPU.Seconds()/steady.Seconds(), "hub-cores-steady")
	b.Logf("%d clusters, %d placements: created in %s, hub settled after %s using %s CPU; hub RSS peak %.0f MiB, steady %.0f MiB (anonymous %.0f, the binary's pages %.0f); steady CPU %.3f cores",
		clusters, placements, created.Round(time.Millisecond), settled.Round(time.Millisecond), cpuSettled.Round(time.Millisecond),
		peak, last, anon, file, steadyCPU.Seconds()/steady.Seconds())
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func saveHeapProfile(b *testing.B, url, file string) {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatalf("heap profile: %v", err)
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		b.Fatal(err)
	}
	b.Logf("hub heap profile in %s (go tool pprof -top %s)", file, file)
}
