//go:build compare

package compare

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

// The policy workload is the ConfigurationPolicy engine benchmark's shape
// (test/bench/policy): 1,000 inform policies, each with one named musthave
// ConfigMap template, against 5,000 ConfigMaps in 50 namespaces; every tenth
// policy wants a value its object does not have (NonCompliant).
const (
	policyNamespaces = 50
	objectsPerNS     = 100
	policyCount      = 1000
	policyChanges    = 20
)

var policiesGVR = policyv1.GroupVersion.WithResource("configurationpolicies")

// policyWorkload fills one managed apiserver with the objects, then runs
// Flotilla's engine (`flotilla policy run`) and upstream's
// config-policy-controller one after the other as their own processes, each on
// its own namespace of the same 1,000 policies (the first is stopped before
// the second starts). FLOTILLA_COMPARE_CPC_ARGS adds flags to upstream's
// command line (to see what a tuned upstream does, e.g. --evaluation-backoff 1);
// FLOTILLA_COMPARE_POLICY_ARGS adds flags to Flotilla's (e.g.
// --pprof-bind-address 127.0.0.1:6061, to take heap profiles during the run).
func policyWorkload(b *testing.B, upstream string) []row {
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(b, testenv.Options{Clusters: 1, NoHub: true})
	cluster := env.Clusters[0]
	cfg := rest.CopyConfig(cluster.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	kube := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)

	start := time.Now()
	benchutil.Parallel(b, policyNamespaces, func(i int) error {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: objectNS(i)}}, metav1.CreateOptions{})
		return err
	})
	benchutil.Parallel(b, policyNamespaces*objectsPerNS, func(i int) error {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i%objectsPerNS), Namespace: objectNS(i / objectsPerNS)},
			Data:       map[string]string{"level": "info", "owner": fmt.Sprintf("team-%d", i%7)},
		}
		_, err := kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
	b.Logf("%d ConfigMaps in %d namespaces created in %s", policyNamespaces*objectsPerNS, policyNamespaces, time.Since(start).Round(time.Millisecond))

	f := policyRun(b, ctx, kube, dyn, "cmp-flotilla", func(ns string) (int, func()) {
		return startProcess(b, ctx, "flotilla-policy", benchutil.Flotilla(b), append([]string{"policy", "run",
			"--kubeconfig", cluster.KubeconfigPath, "--namespace", ns, "--gatekeeper-audit", "off", "--metrics-addr", ""},
			append(limitArgs(b, "--kube-api-qps", "--kube-api-burst"), strings.Fields(os.Getenv("FLOTILLA_COMPARE_POLICY_ARGS"))...)...)...)
	})
	u := policyRun(b, ctx, kube, dyn, "cmp-upstream", func(ns string) (int, func()) {
		// Run locally (no Deployment of its own to find), one watched namespace.
		return startProcessEnv(b, ctx, "upstream-config-policy-controller", filepath.Join(upstream, "config-policy-controller"),
			[]string{"KUBECONFIG=" + cluster.KubeconfigPath, "WATCH_NAMESPACE=" + ns, "OSDK_FORCE_RUN_MODE=local"},
			append([]string{"controller", "--leader-elect=false", "--enable-ocm-policy-namespace=false",
				"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", freePort(b)),
				"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", freePort(b))},
				append(limitArgs(b, "--client-max-qps", "--client-burst"), strings.Fields(os.Getenv("FLOTILLA_COMPARE_CPC_ARGS"))...)...)...)
	})
	const w = "policy 1000x5000"
	return []row{
		{w, "first full pass (s)", f.first.Seconds(), u.first.Seconds()},
		{w, "CPU during first pass (s)", f.firstCPU.Seconds(), u.firstCPU.Seconds()},
		{w, "change -> status p50 (ms)", ms(f.p50), ms(u.p50)},
		{w, "change -> status max (ms)", ms(f.max), ms(u.max)},
		{w, "CPU, whole run (s)", f.cpu.Seconds(), u.cpu.Seconds()},
		{w, "peak RSS (MiB)", f.peakRSS, u.peakRSS},
		{w, "peak anonymous RSS (MiB)", f.peakAnon, u.peakAnon},
		{w, "file-backed RSS at the end (MiB)", f.fileRSS, u.fileRSS},
	}
}

type policyResult struct {
	first, firstCPU, p50, max, cpu time.Duration
	peakRSS                        float64
	// peakAnon is the largest anonymous RSS sampled (heap, stacks); fileRSS
	// is the binary's resident pages at the end (shared page cache: it
	// depends on the binary's size and on what the cache holds).
	peakAnon, fileRSS float64
}

// policyRun creates the 1,000 policies in ns, starts the engine, and clocks
// from its start until every policy has a compliance status; then it changes
// the objects of ten Compliant policies twice each (to NonCompliant and back),
// one at a time, clocking each patch until the policy's status follows.
func policyRun(b *testing.B, ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, ns string,
	start func(ns string) (int, func())) policyResult {
	ensureNamespaceCS(b, ctx, kube, ns)
	benchutil.Parallel(b, policyCount, func(i int) error {
		want := "info"
		if i%10 == 0 {
			want = "debug"
		}
		_, err := dyn.Resource(policiesGVR).Namespace(ns).Create(ctx, benchPolicy(i, want), metav1.CreateOptions{})
		return err
	})

	// The policies' compliance, kept current by a watch (the clock reads it).
	var mu sync.Mutex
	state := map[string]string{}
	observe := func(obj interface{}) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		s, _, _ := unstructured.NestedString(u.Object, "status", "compliant")
		mu.Lock()
		state[u.GetName()] = s
		mu.Unlock()
	}
	inf := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil).ForResource(policiesGVR).Informer()
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: observe, UpdateFunc: func(_, o interface{}) { observe(o) }})
	ictx, icancel := context.WithCancel(ctx)
	defer icancel()
	go inf.Run(ictx.Done())
	toolscache.WaitForCacheSync(ictx.Done(), inf.HasSynced)
	stateOf := func(name string) string { mu.Lock(); defer mu.Unlock(); return state[name] }
	evaluated := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, s := range state {
			if s != "" {
				n++
			}
		}
		return n
	}

	b.StartTimer()
	begin := time.Now()
	pid, stop := start(ns)
	defer stop()
	peakAnon := benchutil.PeakAnon(pid, 100*time.Millisecond)
	last := time.Now()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Minute, true, func(context.Context) (bool, error) {
		n := evaluated()
		if time.Since(last) > 10*time.Second {
			fmt.Fprintf(os.Stderr, "    %s: %d of %d policies have a status after %s\n", ns, n, policyCount, time.Since(begin).Round(time.Second))
			last = time.Now()
		}
		return n == policyCount, nil
	}); err != nil {
		b.Fatalf("%s: not every policy has a status after %s: %v", ns, time.Since(begin), err)
	}
	res := policyResult{first: time.Since(begin), firstCPU: benchutil.CPU(pid)}
	b.StopTimer()

	var lat []time.Duration
	for c := range policyChanges / 2 {
		i := 10*c + 1 // Compliant (every tenth policy is NonCompliant on purpose)
		obj, name := benchObject(i)
		for _, step := range []struct{ level, want string }{{"debug", string(policyv1.NonCompliant)}, {"info", string(policyv1.Compliant)}} {
			t0 := time.Now()
			patch := fmt.Sprintf(`{"data":{"level":%q}}`, step.level)
			if _, err := kube.CoreV1().ConfigMaps(obj).Patch(ctx, name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
				b.Fatal(err)
			}
			if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
				return stateOf(policyName(i)) == step.want, nil
			}); err != nil {
				b.Fatalf("%s: policy %s did not become %s after its object changed: %v", ns, policyName(i), step.want, err)
			}
			lat = append(lat, time.Since(t0))
		}
	}
	slices.Sort(lat)
	res.p50, res.max = lat[len(lat)/2], lat[len(lat)-1]
	res.cpu = benchutil.CPU(pid)
	_, res.peakRSS = benchutil.Memory(pid)
	res.peakAnon = peakAnon()
	_, res.fileRSS, _ = benchutil.MemoryParts(pid)
	b.Logf("%s: %d policies all with a status after %s (CPU %s); change -> status p50 %s, max %s over %d changes; CPU %s in all, peak RSS %.0f MiB (anonymous %.0f MiB at most, file-backed %.0f MiB at the end)",
		ns, policyCount, res.first.Round(time.Millisecond), res.firstCPU.Round(time.Millisecond), res.p50.Round(time.Millisecond),
		res.max.Round(time.Millisecond), len(lat), res.cpu.Round(time.Millisecond), res.peakRSS, res.peakAnon, res.fileRSS)
	stop()
	return res
}

func objectNS(i int) string { return fmt.Sprintf("bench-%02d", i) }

func policyName(i int) string { return fmt.Sprintf("p-%04d", i) }

// benchObject is the ConfigMap policy i checks: object 5*i.
func benchObject(i int) (ns, name string) {
	o := 5 * i
	return objectNS(o / objectsPerNS), fmt.Sprintf("cm-%d", o%objectsPerNS)
}

func benchPolicy(i int, level string) *unstructured.Unstructured {
	ns, name := benchObject(i)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": policyv1.GroupVersion.String(), "kind": "ConfigurationPolicy",
		"metadata": map[string]any{"name": policyName(i)},
		"spec": map[string]any{
			"remediationAction": "inform",
			"severity":          "low",
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
