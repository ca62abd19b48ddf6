// Package policy benchmarks the ConfigurationPolicy engine on a real
// kube-apiserver: 1,000 ConfigurationPolicies (one object template each)
// against 5,000 objects. Results: docs/benchmarks.md.
//
//	go test -run '^$' -bench . -benchtime 1x ./test/bench/policy/
package policy

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/configpolicy"
	"flotilla.dev/flotilla/test/testenv"
)

const (
	namespaces   = 50
	objectsPerNS = 100 // 5,000 ConfigMaps
	policies     = 1000
	changes      = 20
	idleWindow   = 20 * time.Second
)

var policiesGVR = policyv1.GroupVersion.WithResource("configurationpolicies")

func BenchmarkConfigurationPolicies(b *testing.B) {
	env := testenv.Start(b, testenv.Options{Clusters: 1, NoHub: true})
	cfg := rest.CopyConfig(env.Clusters[0].Config)
	cfg.QPS, cfg.Burst = 500, 1000
	kube := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx := b.Context()

	b.Logf("creating %d namespaces, %d ConfigMaps and %d ConfigurationPolicies", namespaces, namespaces*objectsPerNS, policies)
	parallel(b, namespaces, func(i int) error {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(i)}}, metav1.CreateOptions{})
		return err
	})
	parallel(b, namespaces*objectsPerNS, func(i int) error {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i%objectsPerNS), Namespace: nsName(i / objectsPerNS)},
			Data:       map[string]string{"level": "info", "owner": "team-" + strconv.Itoa(i%7)},
		}
		_, err := kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
	// Policy i checks ConfigMap i (every fifth object); every tenth policy wants
	// a value the object does not have, so it is NonCompliant.
	parallel(b, policies, func(i int) error {
		want := "info"
		if i%10 == 0 {
			want = "debug"
		}
		_, err := dyn.Resource(policiesGVR).Namespace(nsName(0)).Create(ctx, policyObject(i, want), metav1.CreateOptions{})
		return err
	})

	for n := 0; n < b.N; n++ {
		metrics := configpolicy.NewMetrics(nil)
		runCtx, stop := context.WithCancel(ctx)
		start := time.Now()
		cpuStart := cpuTime()
		// FLOTILLA_BENCH_POLICY_QPS and _WORKERS override the engine's defaults (200 QPS, 4 workers).
		qps, _ := strconv.ParseFloat(os.Getenv("FLOTILLA_BENCH_POLICY_QPS"), 32)
		workers, _ := strconv.Atoi(os.Getenv("FLOTILLA_BENCH_POLICY_WORKERS"))
		opts := configpolicy.Options{Config: env.Clusters[0].Config, Metrics: metrics, QPS: float32(qps), Workers: workers}
		if _, err := configpolicy.Start(runCtx, opts); err != nil {
			b.Fatal(err)
		}
		waitUntil(b, 10*time.Minute, func() bool { return evaluatedPolicies(b, dyn) == policies })
		first := time.Since(start)
		firstCPU := cpuTime() - cpuStart
		b.ReportMetric(first.Seconds(), "s/first-full-evaluation")
		count, sum := histogram(metrics)
		b.Logf("first full evaluation of %d policies: %s (engine CPU %s; %d evaluations, mean %s each, status write and event included)",
			policies, first.Round(time.Millisecond), firstCPU.Round(time.Millisecond), count, (sum / time.Duration(max(count, 1))).Round(100*time.Microsecond))

		// Change -> status: flip the object of a Compliant policy and time its status.
		var lat []time.Duration
		for c := 0; c < changes/2; c++ {
			i := 10*c + 1 // a Compliant policy (every tenth is NonCompliant on purpose)
			ns, name := objectOf(i)
			for _, step := range []struct {
				level string
				want  policyv1.ComplianceState
			}{{"debug", policyv1.NonCompliant}, {"info", policyv1.Compliant}} {
				t0 := time.Now()
				patch := fmt.Sprintf(`{"data":{"level":%q}}`, step.level)
				if _, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
					b.Fatal(err)
				}
				waitUntil(b, time.Minute, func() bool { return policyState(b, dyn, i) == step.want })
				lat = append(lat, time.Since(t0))
			}
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		p50, p95, worst := lat[len(lat)/2], lat[len(lat)*95/100], lat[len(lat)-1]
		b.ReportMetric(float64(p50.Milliseconds()), "ms/change-to-status-p50")
		b.ReportMetric(float64(p95.Milliseconds()), "ms/change-to-status-p95")
		b.Logf("object change -> policy status (%d changes): p50 %s, p95 %s, max %s", len(lat), p50.Round(time.Millisecond), p95.Round(time.Millisecond), worst.Round(time.Millisecond))

		// Idle: nothing changes; how much CPU does the engine use? (Let the
		// last change's evaluation finish counting itself first.)
		<-time.After(time.Second)
		evalsBefore := evaluations(metrics)
		idleStart := cpuTime()
		idleT0 := time.Now()
		<-time.After(idleWindow)
		idle := cpuTime() - idleStart
		pct := 100 * idle.Seconds() / time.Since(idleT0).Seconds()
		b.ReportMetric(pct, "%cpu-idle")
		b.Logf("idle for %s: engine CPU %s (%.2f%% of one core), %v evaluations", idleWindow, idle.Round(time.Millisecond), pct, evaluations(metrics)-evalsBefore)

		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rss := rssMiB()
		b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "MiB-heap")
		b.ReportMetric(rss, "MiB-rss")
		b.Logf("memory after GC: heap %.1f MiB, process RSS %.1f MiB (benchmark and engine; the apiserver is a separate process)",
			float64(ms.HeapAlloc)/(1<<20), rss)
		stop()
	}
}

func nsName(i int) string { return fmt.Sprintf("bench-%02d", i) }

// objectOf is the ConfigMap policy i checks: object 5*i.
func objectOf(i int) (ns, name string) {
	o := 5 * i
	return nsName(o / objectsPerNS), fmt.Sprintf("cm-%d", o%objectsPerNS)
}

func policyObject(i int, level string) *unstructured.Unstructured {
	ns, name := objectOf(i)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": policyv1.GroupVersion.String(), "kind": "ConfigurationPolicy",
		"metadata": map[string]any{"name": fmt.Sprintf("p-%04d", i)},
		"spec": map[string]any{
			"remediationAction": "inform",
			"object-templates": []any{map[string]any{
				"complianceType": "musthave",
				"objectDefinition": map[string]any{
					"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": name, "namespace": ns},
					"data":     map[string]any{"level": level},
				},
			}},
		},
	}}
}

func evaluatedPolicies(b *testing.B, dyn dynamic.Interface) int {
	list, err := dyn.Resource(policiesGVR).Namespace(nsName(0)).List(b.Context(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, p := range list.Items {
		if s, _, _ := unstructured.NestedString(p.Object, "status", "compliant"); s != "" {
			n++
		}
	}
	return n
}

func policyState(b *testing.B, dyn dynamic.Interface, i int) policyv1.ComplianceState {
	p, err := dyn.Resource(policiesGVR).Namespace(nsName(0)).Get(b.Context(), fmt.Sprintf("p-%04d", i), metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	s, _, _ := unstructured.NestedString(p.Object, "status", "compliant")
	return policyv1.ComplianceState(s)
}

func evaluations(m *configpolicy.Metrics) int {
	total := 0.0
	for _, l := range []string{"Compliant", "NonCompliant"} {
		total += counterValue(m, l)
	}
	return int(total)
}

// waitUntil polls cond every 20ms (a benchmark may wait; tests may not).
func waitUntil(b *testing.B, limit time.Duration, cond func() bool) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(limit)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			b.Fatalf("condition not met within %s", limit)
		}
	}
}

func parallel(b *testing.B, n int, f func(i int) error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func rssMiB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
