//go:build compare

package compare

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/test/bench/benchutil"
	"flotilla.dev/flotilla/test/testenv"
)

// The placement workload is upstream's own placement benchmark: every cluster in
// one set, each placement asks for 10 of them ranked by an AddOn score,
// ResourceAllocatableCPU and Balance.
const (
	placementClusters = 1000
	perPlacement      = 10
	scoreName         = "bench"
)

// placementWorkload fills one hub, then runs Flotilla's hub and upstream's
// placement controller one after the other, each on its own namespace of
// placements (the other's are deleted first).
func placementWorkload(b *testing.B, upstream string, count int) []row {
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(b, testenv.Options{})
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	fillFleet(b, ctx, c)

	runs := []struct {
		name  string
		start func(ns string) (pid int, stop func())
	}{
		{"flotilla", func(string) (int, func()) {
			args := append([]string{"hub", "--kubeconfig", env.Hub.KubeconfigPath,
				"--compliance-db", "off", "--remove-webhooks-on-stop"}, limitArgs(b, "--kube-api-qps", "--kube-api-burst")...)
			if hubProfile.file != "" {
				args = append(args, "--pprof-bind-address", hubProfile.addr)
			}
			return startProcess(b, ctx, "flotilla-hub", benchutil.Flotilla(b), args...)
		}},
		{"upstream", func(string) (int, func()) {
			ensureNamespace(b, ctx, c, "open-cluster-management-hub")
			return startProcess(b, ctx, "upstream-placement", filepath.Join(upstream, "placement"), append([]string{"controller",
				"--kubeconfig", env.Hub.KubeconfigPath, "--namespace", "open-cluster-management-hub",
				"--disable-leader-election", "--listen", fmt.Sprintf("127.0.0.1:%d", freePort(b))},
				limitArgs(b, "--kube-api-qps", "--kube-api-burst")...)...)
		}},
	}
	got := map[string]placementResult{}
	for _, r := range runs {
		got[r.name] = placementRun(b, ctx, c, cfg, "cmp-"+r.name, count, r.start)
	}
	f, u := got["flotilla"], got["upstream"]
	w := fmt.Sprintf("placement %dx%d", count, placementClusters)
	return []row{
		{w, "time to all decided (s)", f.elapsed.Seconds(), u.elapsed.Seconds()},
		{w, "controller CPU (s)", f.cpu.Seconds(), u.cpu.Seconds()},
		{w, "controller peak RSS (MiB)", f.peakRSS, u.peakRSS},
	}
}

// hubProfile is FLOTILLA_COMPARE_HUB_PROFILE: when set to a file name, the
// hub serves Go's profiles on a local port and the first
// FLOTILLA_COMPARE_HUB_PROFILE_SECONDS (default 30) of Flotilla's placement
// window are profiled into the file (go tool pprof FILE). Profiling costs the
// hub a little CPU: a profiled run's figures are not the ones to report.
var hubProfile = newProfileKnob()

type profileKnob struct {
	file, addr string
	seconds    int
}

func newProfileKnob() profileKnob {
	p := profileKnob{file: os.Getenv("FLOTILLA_COMPARE_HUB_PROFILE"), seconds: 30}
	if s, err := strconv.Atoi(os.Getenv("FLOTILLA_COMPARE_HUB_PROFILE_SECONDS")); err == nil && s > 0 {
		p.seconds = s
	}
	if p.file != "" {
		if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
			p.addr = l.Addr().String()
			l.Close()
		}
	}
	return p
}

// take starts a CPU profile of the hub when the knob is set; the returned
// function waits for it and writes it to the file (a failure is logged, the
// run goes on).
func (p profileKnob) take(b *testing.B, ctx context.Context) func() {
	if p.file == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.addr, p.seconds)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			b.Logf("hub profile: %v", err)
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Logf("hub profile: %v", err)
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s", resp.Status, body)
		}
		if err == nil {
			err = os.WriteFile(p.file, body, 0o644)
		}
		if err != nil {
			b.Logf("hub profile: %v", err)
			return
		}
		b.Logf("hub CPU profile of %d s written to %s", p.seconds, p.file)
	}()
	return func() { <-done }
}

type placementResult struct {
	elapsed, cpu time.Duration
	peakRSS      float64 // MiB, VmHWM of the controller process over its whole life
}

// fillFleet creates the set, the clusters (with allocatable CPU) and an
// AddOnPlacementScore in each cluster's namespace.
func fillFleet(b *testing.B, ctx context.Context, c client.Client) {
	start := time.Now()
	must(b, c.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}))
	benchutil.Parallel(b, placementClusters, func(i int) error {
		name := fmt.Sprintf("cluster-%04d", i)
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "bench"}}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true,
			// No agent renews a lease: a long lease keeps a hub from tainting
			// every cluster unreachable (and every placement re-scheduled)
			// in the middle of a run, which only the side running first
			// would see.
			LeaseDurationSeconds: 3600}}
		if err := c.Create(ctx, mc); err != nil {
			return err
		}
		testenv.SetAccepted(mc) // Flotilla decides accepted clusters only; upstream ignores it
		cpu := resource.MustParse(fmt.Sprint(2 + i%15))
		mc.Status.Allocatable = clusterv1.ResourceList{clusterv1.ResourceCPU: cpu}
		mc.Status.Capacity = clusterv1.ResourceList{clusterv1.ResourceCPU: resource.MustParse("16")}
		if err := c.Status().Update(ctx, mc); err != nil {
			return err
		}
		// The cluster's namespace as a hub makes it (Flotilla's hub refuses a
		// cluster whose namespace it did not make: HubAccepted=False).
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{ocm.ClusterNameLabel: name}}}); err != nil {
			return err
		}
		sc := &clusterv1alpha1.AddOnPlacementScore{ObjectMeta: metav1.ObjectMeta{Name: scoreName, Namespace: name}}
		if err := c.Create(ctx, sc); err != nil {
			return err
		}
		sc.Status.Scores = []clusterv1alpha1.AddOnPlacementScoreItem{{Name: scoreName, Value: int32(i*37%201 - 100)}}
		return c.Status().Update(ctx, sc)
	})
	b.Logf("fleet of %d clusters with scores created in %s", placementClusters, time.Since(start).Round(time.Millisecond))
}

func benchPlacement(ns string, i int) *clusterv1beta1.Placement {
	n := int32(perPlacement)
	builtIn := func(name string) clusterv1beta1.PrioritizerConfig {
		return clusterv1beta1.PrioritizerConfig{Weight: 1, ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{
			Type: clusterv1beta1.ScoreCoordinateTypeBuiltIn, BuiltIn: name}}
	}
	return &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Namespace: ns},
		Spec: clusterv1beta1.PlacementSpec{
			NumberOfClusters: &n,
			PrioritizerPolicy: clusterv1beta1.PrioritizerPolicy{Mode: clusterv1beta1.PrioritizerPolicyModeAdditive,
				Configurations: []clusterv1beta1.PrioritizerConfig{
					{Weight: 1, ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeAddOn,
						AddOn: &clusterv1beta1.AddOnScore{ResourceName: scoreName, ScoreName: scoreName}}},
					builtIn("ResourceAllocatableCPU"),
					builtIn("Balance"),
				}},
			// The clusters have no agents: a hub may taint them once their lease grace ends.
			Tolerations: []clusterv1beta1.Toleration{{Key: clusterv1.ManagedClusterTaintUnreachable, Operator: clusterv1beta1.TolerationOpExists},
				{Key: clusterv1.ManagedClusterTaintUnavailable, Operator: clusterv1beta1.TolerationOpExists}}}}
}

// placementRun starts one controller, waits until it decides a probe placement
// (so both are measured from a warm, synced start), then creates the placements
// in ns and clocks until every one holds its 10 decisions. It stops the
// controller and deletes the placements before returning.
func placementRun(b *testing.B, ctx context.Context, c client.Client, cfg *rest.Config, ns string, count int,
	start func(ns string) (int, func())) placementResult {
	ensureNamespace(b, ctx, c, ns)
	must(b, c.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "bench"}}))
	watcher, err := cache.New(cfg, cache.Options{Scheme: scheme.New(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := watcher.GetInformer(ctx, &clusterv1beta1.PlacementDecision{}); err != nil {
		b.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	go func() { _ = watcher.Start(wctx) }()
	watcher.WaitForCacheSync(wctx)

	pid, stop := start(ns)
	defer stop()
	must(b, c.Create(ctx, benchPlacement(ns, 99999)))
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		return decided(b, ctx, watcher)["p-99999"] == perPlacement, nil
	}); err != nil {
		b.Fatalf("%s: the controller (pid %d) did not decide a first placement within 3 minutes: %v", ns, pid, err)
	}

	// Each side's start-up work on the fleet (Flotilla's hub: acceptance
	// and its other controllers' first pass over 1,000 clusters) is not the
	// placements' work: the clock starts once the process is idle.
	settled := time.Now()
	cpuProbe := benchutil.CPU(pid)
	idle := func() bool {
		c0 := benchutil.CPU(pid)
		select {
		case <-ctx.Done():
			return true
		case <-time.After(2 * time.Second):
		}
		return benchutil.CPU(pid)-c0 < 100*time.Millisecond // under 5% of a core
	}
	for time.Since(settled) < 3*time.Minute {
		if idle() {
			break
		}
	}
	b.StartTimer()
	cpu0 := benchutil.CPU(pid)
	b.Logf("%s: the controller used %s CPU from its start to the probe decided, then %s more in %s until idle",
		ns, cpuProbe, cpu0-cpuProbe, time.Since(settled).Round(time.Second))
	begin := time.Now()
	profiled := func() {}
	if ns == "cmp-flotilla" {
		profiled = hubProfile.take(b, ctx)
	}
	benchutil.Parallel(b, count, func(i int) error { return c.Create(ctx, benchPlacement(ns, i)) })
	created := time.Since(begin)
	last := time.Now()
	err = wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Minute, true, func(ctx context.Context) (bool, error) {
		done := 0
		for _, n := range decided(b, ctx, watcher) {
			if n == perPlacement {
				done++
			}
		}
		if time.Since(last) > 10*time.Second {
			fmt.Fprintf(os.Stderr, "    %s: %d of %d placements decided after %s\n", ns, done-1, count, time.Since(begin).Round(time.Second))
			last = time.Now()
		}
		return done == count+1, nil
	})
	elapsed := time.Since(begin)
	b.StopTimer()
	if err != nil {
		b.Fatalf("%s: not every placement decided after %s: %v", ns, elapsed, err)
	}
	res := placementResult{elapsed: elapsed, cpu: benchutil.CPU(pid) - cpu0}
	_, res.peakRSS = benchutil.Memory(pid)
	profiled()
	b.Logf("%s: %d placements created in %s, all decided after %s; controller CPU %s, peak RSS %.0f MiB",
		ns, count, created.Round(time.Millisecond), elapsed.Round(time.Millisecond), res.cpu, res.peakRSS)

	stop()
	// Deleting 10,000 objects in one call can fail on a loaded apiserver (a
	// stream reset): what is left is deleted on the next try.
	for _, obj := range []client.Object{&clusterv1beta1.Placement{}, &clusterv1beta1.PlacementDecision{}} {
		var err error
		for try := 0; try < 5; try++ {
			if err = c.DeleteAllOf(ctx, obj, client.InNamespace(ns)); err == nil {
				break
			}
			b.Logf("%s: delete all %T: %v (retrying)", ns, obj, err)
		}
		must(b, err)
	}
	return res
}

// decided sums, per placement, the clusters its PlacementDecisions hold.
func decided(b *testing.B, ctx context.Context, r client.Reader) map[string]int {
	var ds clusterv1beta1.PlacementDecisionList
	if err := r.List(ctx, &ds, client.UnsafeDisableDeepCopy); err != nil {
		b.Logf("list decisions: %v", err)
		return nil
	}
	n := map[string]int{}
	for _, d := range ds.Items {
		n[d.Labels[clusterv1beta1.PlacementLabel]] += len(d.Status.Decisions)
	}
	return n
}

// startProcess runs a controller as its own process, logging to a file kept
// in the benchmark's temporary folder; stop (safe to call twice) interrupts it
// and waits for it to end.
func startProcess(b *testing.B, ctx context.Context, name, bin string, args ...string) (int, func()) {
	return startProcessEnv(b, ctx, name, bin, nil, args...)
}

// startProcessEnv is startProcess with variables added to the environment.
func startProcessEnv(b *testing.B, ctx context.Context, name, bin string, env []string, args ...string) (int, func()) {
	return startProcessLog(b, ctx, filepath.Join(b.TempDir(), name+".log"), bin, env, args...)
}

// startProcessLog is startProcessEnv logging to the file logPath.
func startProcessLog(b *testing.B, ctx context.Context, logPath, bin string, env []string, args ...string) (int, func()) {
	log, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", bin, err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			log.Close()
		})
	}
	b.Cleanup(stop)
	return cmd.Process.Pid, stop
}

func ensureNamespace(b *testing.B, ctx context.Context, c client.Client, ns string) {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !isAlreadyExists(err) {
		b.Fatal(err)
	}
}

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
