// Package addons benchmarks the hub's addon manager on a real hub apiserver:
// the time from `addon enable` on many simulated clusters to every
// ManagedClusterAddOn Available, and the manager's CPU and memory while they
// are steady. Clusters are simulated: ManagedClusters and namespaces on the
// hub, and a stand-in work agent that marks each addon work Applied; the addon
// uses health mode None, so Available follows the works.
package addons

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"flotilla.dev/flotilla/addons"
	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/addons/ops"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

type benchAddon struct{}

func (benchAddon) Name() string { return "bench" }
func (benchAddon) Options() framework.Options {
	return framework.Options{Health: framework.Health{Mode: framework.HealthNone}}
}
func (benchAddon) Manifests(*clusterv1.ManagedCluster, *addonv1alpha1.ManagedClusterAddOn) ([]k8sruntime.Object, error) {
	return []k8sruntime.Object{&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "default"}, Data: map[string]string{"k": "v"}}}, nil
}

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAddonEnable: FLOTILLA_BENCH_CLUSTERS clusters (default 100).
func BenchmarkAddonEnable(b *testing.B) {
	n := benchutil.EnvInt(b, "FLOTILLA_BENCH_CLUSTERS", 100, 1)
	for range b.N {
		run(b, n)
	}
}

func run(b *testing.B, n int) {
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(b, testenv.Options{})
	cfg := env.Hub.Config
	cfg.QPS, cfg.Burst = 200, 400
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	reg, _ := framework.NewRegistry(benchAddon{})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		b.Fatal(err)
	}
	if err := addons.Setup(mgr, addons.Options{Registry: reg}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	var names []string
	for i := range n {
		name := fmt.Sprintf("c%04d", i)
		names = append(names, name)
		if err := c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}); err != nil {
			b.Fatal(err)
		}
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			b.Fatal(err)
		}
	}
	// The stand-in work agent: marks every addon work Applied and Available.
	agentCtx, stopAgent := context.WithCancel(ctx)
	go playWorkAgent(agentCtx, c)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKey{Name: "bench"}, &addonv1alpha1.ClusterManagementAddOn{}) == nil, nil
	}); err != nil {
		b.Fatal("ClusterManagementAddOn bench not created")
	}

	cpu0, start := cpu(), time.Now()
	if _, err := ops.Enable(ctx, c, ops.EnableOptions{Names: []string{"bench"}, Clusters: names}); err != nil {
		b.Fatal(err)
	}
	enabled := time.Since(start)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		return countAvailable(ctx, c) == n, nil
	}); err != nil {
		b.Fatalf("only %d of %d addons Available", countAvailable(ctx, c), n)
	}
	all := time.Since(start)
	busy := cpu() - cpu0
	// Steady: nothing changes for 20s (the stand-in work agent stopped; the
	// manager alone is measured).
	stopAgent()
	// One CPU sample a second for steadyWindow seconds; the busiest second is
	// reported beside the mean.
	const steadyWindow = 20
	tick := time.NewTicker(time.Second)
	cpu1, last, peak := cpu(), cpu(), time.Duration(0)
	for range steadyWindow {
		<-tick.C
		now := cpu()
		peak, last = max(peak, now-last), now
	}
	tick.Stop()
	steady := cpu() - cpu1
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(all.Seconds(), "s-to-all-available")
	b.ReportMetric(enabled.Seconds(), "s-enable")
	b.ReportMetric(busy.Seconds(), "cpu-s-rollout")
	b.ReportMetric(steady.Seconds()/steadyWindow*100, "%cpu-steady")
	b.ReportMetric(peak.Seconds()*100, "%cpu-steady-peak-second")
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "MiB-heap")
	b.ReportMetric(float64(rss())/(1<<20), "MiB-rss")
}

func countAvailable(ctx context.Context, c client.Client) int {
	var list addonv1alpha1.ManagedClusterAddOnList
	if err := c.List(ctx, &list); err != nil {
		return 0
	}
	n := 0
	for _, m := range list.Items {
		if meta.IsStatusConditionTrue(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable) {
			n++
		}
	}
	return n
}

func playWorkAgent(ctx context.Context, c client.Client) {
	for ctx.Err() == nil {
		var works workv1.ManifestWorkList
		if err := c.List(ctx, &works); err == nil {
			for i := range works.Items {
				w := &works.Items[i]
				if meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied) {
					continue
				}
				for _, t := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
					meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "Bench", ObservedGeneration: w.Generation})
				}
				_ = c.Status().Update(ctx, w)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func rss() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, res int64
	_, _ = fmt.Sscan(string(data), &size, &res)
	return res * int64(os.Getpagesize())
}
