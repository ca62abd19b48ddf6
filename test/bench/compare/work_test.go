//go:build compare

package compare

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	certutil "k8s.io/client-go/util/cert"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	hubwork "flotilla.dev/flotilla/hub/work"
	"flotilla.dev/flotilla/klusterlet/work"
	"flotilla.dev/flotilla/klusterlet/work/worktest"
	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

const works = 1000

// workModes are the work workload's runs: a burst of 1,000 (8 creators as
// fast as the hub takes them) and steady rates of 20 and 50 works/s (one
// create every 1/rate, each on its own goroutine).
var workModes = []struct {
	name string
	rate int // works/s; 0: burst
}{{"work 1000 burst", 0}, {"work 1000 at 20/s", 20}, {"work 1000 at 50/s", 50}}

// workWorkload runs each of workModes through Flotilla's klusterlet work
// agent, then through upstream's work agent, on the same hub and managed
// cluster; each agent serves its own cluster name (and spoke namespace), and
// the first is stopped before the second starts. During Flotilla's runs the
// hub serves Flotilla's ManifestWork mutating webhook (hub/work
// MutatingWebhooks: new works come with the agent's finalizer, as on a
// Flotilla hub), so its creates include that admission call; during
// upstream's runs there is none, as on an upstream hub.
func workWorkload(b *testing.B, upstream string) []row {
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(b, testenv.Options{Clusters: 1})
	spokeKC := env.Clusters[0].KubeconfigPath
	hubKC := env.Hub.KubeconfigPath
	var rows []row
	for i, m := range workModes {
		removeHook := serveFinalizerWebhook(b, ctx, env.Hub.Config)
		f := workRun(b, ctx, env, fmt.Sprintf("cmp-flotilla-%d", i), m.rate, func(cluster string) func() {
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
		removeHook()
		u := workRun(b, ctx, env, fmt.Sprintf("cmp-upstream-%d", i), m.rate, func(cluster string) func() {
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
		rows = append(rows,
			row{m.name, "all Applied (s)", f.all.Seconds(), u.all.Seconds()},
			row{m.name, "create -> Applied p50 (ms)", ms(f.p50), ms(u.p50)},
			row{m.name, "create -> Applied p99 (ms)", ms(f.p99), ms(u.p99)})
	}
	return rows
}

// serveFinalizerWebhook serves hub/work's finalizer webhook in this process
// and registers it with the hub apiserver, as a Flotilla hub does; it waits
// until a new work gets the finalizer. The returned func removes it.
func serveFinalizerWebhook(b *testing.B, ctx context.Context, hubCfg *rest.Config) (remove func()) {
	certDir := b.TempDir()
	crt, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	port := freePort(b)
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir})
	srv.Register(hubwork.FinalizerPath, &webhook.Admission{Handler: hubwork.FinalizerHandler()})
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Start(sctx); err != nil {
			b.Errorf("finalizer webhook: %v", err)
		}
	}()
	hooks := hubwork.MutatingWebhooks()
	for i := range hooks {
		url := fmt.Sprintf("https://127.0.0.1:%d%s", port, *hooks[i].ClientConfig.URL)
		hooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: crt}
	}
	admission := kubernetes.NewForConfigOrDie(hubCfg).AdmissionregistrationV1().MutatingWebhookConfigurations()
	const name = "bench-work-finalizer"
	if _, err := admission.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	// The apiserver picks the configuration up asynchronously.
	hubWork := workclient.NewForConfigOrDie(hubCfg)
	ensureNamespaceCS(b, ctx, kubernetes.NewForConfigOrDie(hubCfg), "bench-probe")
	probes := 0
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		probes++
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "bench-probe", Name: fmt.Sprintf("probe-%d", probes)}}
		w.Spec.Workload.Manifests = []workv1.Manifest{{RawExtension: k8sruntime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p","namespace":"default"}}`)}}}
		got, err := hubWork.WorkV1().ManifestWorks("bench-probe").Create(ctx, w, metav1.CreateOptions{})
		return err == nil && len(got.Finalizers) > 0, nil
	}); err != nil {
		b.Fatal("the finalizer webhook did not take effect within a minute")
	}
	return func() {
		if err := admission.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		stop()
		<-done
	}
}

type workResult struct{ all, p50, p99 time.Duration }

// workRun prepares cluster's namespaces, starts its agent, waits for a warm-up
// work, then creates the works (a burst of 8 goroutines, or one every
// 1/rate) and clocks until every work shows Applied=True on the hub.
func workRun(b *testing.B, ctx context.Context, env *testenv.Env, cluster string, rate int, start func(cluster string) (stop func())) workResult {
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
	create := func(i int) error {
		name := fmt.Sprintf("w%04d", i)
		t0 := time.Now()
		if _, err := hubWork.WorkV1().ManifestWorks(cluster).Create(ctx, newWork(name), metav1.CreateOptions{}); err != nil {
			return err
		}
		cmu.Lock()
		created[name] = t0
		cmu.Unlock()
		return nil
	}
	if rate == 0 {
		benchutil.ParallelN(b, 8, works, create)
	} else {
		tick := time.NewTicker(time.Second / time.Duration(rate))
		var wg sync.WaitGroup
		for i := range works {
			<-tick.C
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := create(i); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		tick.Stop()
	}
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
