// Package governance benchmarks the hub side of governance on a real
// kube-apiserver: the propagator (with the placement controller) placing
// 100 policies on 1,000 simulated clusters (100,000 replicas), and the time
// from a spoke-side compliance change (the framework agent's status patch on
// a replica) to the root policy's status. Results: docs/benchmarks.md.
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 2h ./test/bench/governance/
//
// FLOTILLA_BENCH_POLICIES, FLOTILLA_BENCH_CLUSTERS and FLOTILLA_BENCH_CHANGES
// change the size (default 100, 1000, 200); FLOTILLA_BENCH_HUB_QPS the
// propagator's client rate limit (default 100, the hub's own default).
package governance

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/hub/placement"
	"flotilla.dev/flotilla/internal/pki"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/propagator"
	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

const ns = "policies"

func BenchmarkGovernance(b *testing.B) {
	policies := benchutil.EnvInt(b, "FLOTILLA_BENCH_POLICIES", 100, 1)
	clusters := benchutil.EnvInt(b, "FLOTILLA_BENCH_CLUSTERS", 1000, 1)
	changes := benchutil.EnvInt(b, "FLOTILLA_BENCH_CHANGES", 200, 1)
	qps := benchutil.EnvInt(b, "FLOTILLA_BENCH_HUB_QPS", 100, 1)
	ctrl.SetLogger(logr.Discard())
	env := testenv.Start(b, testenv.Options{})
	ctx := b.Context()
	admin := rest.CopyConfig(env.Hub.Config)
	admin.QPS, admin.Burst = 1000, 2000
	c, err := client.NewWithWatch(admin, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}

	// The simulated fleet: accepted ManagedClusters with their namespaces in
	// one cluster set; nothing runs on them (the spoke is played below by
	// status patches, as the framework agent writes them).
	b.Logf("creating %d clusters, %d policies", clusters, policies)
	must(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(b, c.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}))
	must(b, c.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: ns},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "fleet"}}))
	benchutil.Parallel(b, clusters, func(i int) error {
		name := fmt.Sprintf("cluster-%04d", i)
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			return err
		}
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "fleet"}}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
		if err := c.Create(ctx, mc); err != nil {
			return err
		}
		testenv.SetAccepted(mc) // placement and the propagator act on accepted clusters only
		return c.Status().Update(ctx, mc)
	})
	must(b, c.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: ns},
		Spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{"fleet"}}}))

	// The hub side: placement and propagator, in this process.
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.QPS, cfg.Burst = float32(qps), 2*qps
	certDir := webhookCert(b)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: 0, CertDir: certDir})})
	if err != nil {
		b.Fatal(err)
	}
	must(b, placement.Setup(mgr, placement.Options{DisableManifestWorkReplicaSet: true}))
	must(b, propagator.Setup(mgr, propagator.Options{}))
	runtime.GC()
	heapBefore := heapInUse()
	go func() { _ = mgr.Start(ctx) }()
	// Wait for the placement to decide every cluster before timing.
	waitFor(b, 10*time.Minute, func() bool {
		var p clusterv1beta1.Placement
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "all"}, &p) == nil && int(p.Status.NumberOfSelectedClusters) == clusters
	}, "the placement never selected every cluster")

	start := time.Now()
	benchutil.Parallel(b, policies, func(i int) error {
		return benchutil.CreateBoundPolicy(ctx, c, ns, fmt.Sprintf("policy-%03d", i), i)
	})
	// Fully propagated: every root lists every cluster in its status (written
	// after its replicas), then the replicas are counted once.
	waitFor(b, 2*time.Hour, func() bool {
		var l policyv1.PolicyList
		if c.List(ctx, &l, client.InNamespace(ns)) != nil {
			return false
		}
		done := 0
		for _, p := range l.Items {
			if len(p.Status.Status) == clusters {
				done++
			}
		}
		return done == policies
	}, "never fully propagated")
	propagated := time.Since(start)
	replicas := countReplicas(b, c)
	runtime.GC()
	heap := heapInUse() - heapBefore
	b.Logf("%d policies x %d clusters: %d replicas in %s (%.0f replicas/s); Go heap in use after GC +%.0f MiB; process RSS %s",
		policies, clusters, replicas, propagated.Round(time.Millisecond), float64(replicas)/propagated.Seconds(), float64(heap)/(1<<20), rss())
	if replicas != policies*clusters {
		b.Fatalf("%d replicas, want %d", replicas, policies*clusters)
	}
	b.ReportMetric(propagated.Seconds(), "s-propagated")
	b.ReportMetric(float64(heap)/(1<<20), "MiB-heap")

	// Spoke-side changes: the replica's status patched as the framework
	// agent patches it; timed until the root's status shows the cluster's
	// new state (a watch on the root).
	var lat []time.Duration
	for i := 0; i < changes; i++ {
		policy := fmt.Sprintf("policy-%03d", i%policies)
		cluster := fmt.Sprintf("cluster-%04d", (i*7919)%clusters)
		state := policyv1.NonCompliant
		if (i/policies)%2 == 1 {
			state = policyv1.Compliant
		}
		w, err := watchRoot(ctx, c, policy)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		patch := fmt.Sprintf(`{"status":{"compliant":%q,"details":[{"templateMeta":{"name":%q},"compliant":%q,"history":[{"lastTimestamp":%q,"message":"%s; bench","eventName":"e%d"}]}]}}`,
			state, policy+"-ns", state, time.Now().UTC().Format(time.RFC3339), state, i)
		must(b, c.Status().Patch(ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: ns + "." + policy}},
			client.RawPatch(types.MergePatchType, []byte(patch))))
		if !rootShows(w, cluster, state) {
			b.Fatalf("change %d: the root %s never showed %s for %s", i, policy, state, cluster)
		}
		lat = append(lat, time.Since(t0))
		w.Stop()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.Logf("spoke change -> root status over %d changes: p50 %s, p99 %s, max %s", len(lat), pct(lat, 50), pct(lat, 99), lat[len(lat)-1])
	b.ReportMetric(ms(pct(lat, 50)), "ms-p50")
	b.ReportMetric(ms(pct(lat, 99)), "ms-p99")
}

func watchRoot(ctx context.Context, c client.WithWatch, name string) (watch.Interface, error) {
	return c.Watch(ctx, &policyv1.PolicyList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
}

func rootShows(w watch.Interface, cluster string, state policyv1.ComplianceState) bool {
	deadline := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false
			}
			p, isPolicy := ev.Object.(*policyv1.Policy)
			if !isPolicy {
				continue
			}
			for _, s := range p.Status.Status {
				if s != nil && s.ClusterName == cluster && s.ComplianceState == state {
					return true
				}
			}
		case <-deadline:
			return false
		}
	}
}

func countReplicas(b *testing.B, c client.Client) int {
	n, cont := 0, ""
	for {
		var l metav1.PartialObjectMetadataList
		l.SetGroupVersionKind(policyv1.GroupVersion.WithKind("PolicyList"))
		must(b, c.List(context.Background(), &l, client.HasLabels{policyv1.RootPolicyLabel}, client.Limit(5000), client.Continue(cont)))
		n += len(l.Items)
		if cont = l.Continue; cont == "" {
			return n
		}
	}
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

func waitFor(b *testing.B, limit time.Duration, ok func() bool, msg string) {
	b.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, limit, true,
		func(context.Context) (bool, error) { return ok(), nil }); err != nil {
		b.Fatal(msg)
	}
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// rss is this process's resident set (hub controllers and benchmark
// clients together; the apiserver and etcd are other processes).
func rss() string {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmRSS:"))
		}
	}
	return "unknown"
}

func pct(ds []time.Duration, p int) time.Duration {
	i := (len(ds)*p + 99) / 100
	if i > 0 {
		i--
	}
	return ds[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func webhookCert(b *testing.B) string {
	ca, err := pki.NewCA("governance-bench-webhook-ca", time.Hour)
	must(b, err)
	kp, err := ca.Issue(pki.CertRequest{CommonName: "127.0.0.1", IPs: []net.IP{net.ParseIP("127.0.0.1")}})
	must(b, err)
	dir := b.TempDir()
	must(b, pki.WriteFiles(dir, "tls", kp.CertPEM, kp.KeyPEM))
	return dir
}
