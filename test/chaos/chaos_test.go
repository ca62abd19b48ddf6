//go:build chaos

package chaos

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"

	"net/url"

	"flotilla.dev/flotilla/devenv"
	"flotilla.dev/flotilla/klusterlet/registration"
	"flotilla.dev/flotilla/search/apigroup"
	"flotilla.dev/flotilla/search/searchapi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// objectLabel marks every object the run puts on a cluster.
	objectLabel = "chaos.flotilla.dev/object"
	// rsNamespace holds the run's Placement and ManifestWorkReplicaSet.
	rsNamespace = "chaos"
	rsName      = "chaos-rs"
	// worksPerCluster bounds the live works of one cluster.
	worksPerCluster = 12
	// convergeBound is how long the fleet may take to converge after a fault.
	convergeBound = 4 * time.Minute
	// slowConverge is when a fault still not converged has the hub's view
	// logged, while the trouble lasts.
	slowConverge = 90 * time.Second
	// memoryBound is the most any Flotilla process may hold.
	memoryBound = 1 << 30
	// certSeconds is the life of the clusters' hub certificates in a run of at
	// least rotationRun (the signer's minimum is 600 s): several rotations happen,
	// one of them while the hub is down.
	certSeconds = 600
	rotationRun = 15 * time.Minute
	// leaseSeconds is the heartbeat period the run sets on its clusters, so that
	// a restart waits seconds, not a minute, for a heartbeat.
	leaseSeconds = 5
)

// faultKinds are the faults the injector chooses from.
var faultKinds = []string{"hub", "klusterlet", "cluster-apiserver", "hub-etcd", "addon-agent", "apiservers"}

type run struct {
	t        *testing.T
	ctx      context.Context
	rng      *rand.Rand
	opts     devenv.Options
	clusters []string
	// nodes: the environment has nodes, partitions are a fault kind (nodes_test.go).
	nodes   bool
	hubCfg  *rest.Config
	hubKube kubernetes.Interface
	works   workclient.Interface
	hubOCM  clusterclient.Interface
	spokes  map[string]kubernetes.Interface
	// spokeWorks read the clusters' AppliedManifestWorks.
	spokeWorks map[string]workclient.Interface
	// held are objects of deleted works that an agent holds until its
	// eviction grace ends (Held): reported at the end, once each.
	held map[string]Violation
	// spokeCfgs reach the clusters as admin; gov is the governance part.
	spokeCfgs map[string]*rest.Config
	gov       *governance

	seq       int
	live      map[string]map[string]int // cluster -> work -> version
	rsVersion int
	ops       map[string]int

	mu        sync.Mutex
	memory    map[string]*Memory // process -> its RSS samples
	started   time.Time          // the workload's start (after setup)
	duration  time.Duration
	serials   map[string]map[string]bool // cluster -> hub certificate serials seen
	rotations int
	// faultViolations are found while a fault is on (a partition not noticed,
	// a panic in the log of a Pod killed and deleted).
	faultViolations []Violation
}

// TestChaos is `make chaos`: FLOTILLA_CHAOS_DURATION (default 30m) of workload
// and faults, then the report; it fails on any invariant violation. With
// FLOTILLA_CHAOS_NODES=1 the environment has nodes and partitions are faults too.
func TestChaos(t *testing.T) {
	duration := 30 * time.Minute
	if v := os.Getenv("FLOTILLA_CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "FLOTILLA_CHAOS_DURATION")
		duration = d
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("FLOTILLA_CHAOS_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "FLOTILLA_CHAOS_SEED")
		seed = s
	}
	nodes := os.Getenv("FLOTILLA_CHAOS_NODES") == "1"
	kinds := faultKinds
	if nodes {
		kinds = nodesFaultKinds
	}
	// A study of some faults (FLOTILLA_CHAOS_FAULTS) demands no rotation.
	restricted := os.Getenv("FLOTILLA_CHAOS_FAULTS") != ""
	if restricted {
		var err error
		kinds, err = chooseKinds(os.Getenv("FLOTILLA_CHAOS_FAULTS"), kinds)
		require.NoError(t, err, "FLOTILLA_CHAOS_FAULTS")
	}
	t.Logf("chaos: duration %s, nodes %v, faults %v, seed %d (FLOTILLA_CHAOS_SEED=%d repeats the choices)", duration, nodes, kinds, seed, seed)

	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(root, "bin", "flotilla")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: run `make build` first (`make chaos` does)", bin)
	}
	// Short: a node's containerd socket path must stay under 108 characters.
	dataDir, err := os.MkdirTemp("", "fchaos-")
	require.NoError(t, err)
	progress, err := os.Create(filepath.Join(dataDir, "devenv-progress.log"))
	require.NoError(t, err)
	defer progress.Close()
	t.Logf("chaos: environment and logs in %s (removed when the run passes)", dataDir)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &run{t: t, ctx: ctx, rng: rand.New(rand.NewPCG(seed, 0)), clusters: []string{"cluster1", "cluster2"},
		opts: devenv.Options{DataDir: dataDir, Clusters: 2, FlotillaBinary: bin, Out: progress, Nodes: nodes}, nodes: nodes,
		live:   map[string]map[string]int{},
		ops:    map[string]int{},
		memory: map[string]*Memory{}, duration: duration, held: map[string]Violation{}, spokeWorks: map[string]workclient.Interface{}, spokes: map[string]kubernetes.Interface{}, spokeCfgs: map[string]*rest.Config{}, serials: map[string]map[string]bool{}}
	// The klusterlets of the nodes mode are Pods that `join` installs, with
	// no way to pass them --client-cert-expiration-seconds: rotations are
	// the process mode's.
	// FLOTILLA_CHAOS_HUB_ARGS: more `flotilla hub` flags, e.g. "-v 4" to log its watches.
	r.opts.HubArgs = strings.Fields(os.Getenv("FLOTILLA_CHAOS_HUB_ARGS"))
	shortCerts := duration >= rotationRun && !nodes
	if shortCerts {
		r.opts.KlusterletArgs = []string{"--client-cert-expiration-seconds", strconv.Itoa(certSeconds)}
	}
	// FLOTILLA_CHAOS_KLUSTERLET_ARGS: more `flotilla klusterlet` flags, e.g. "-v 4".
	r.opts.KlusterletArgs = append(r.opts.KlusterletArgs, strings.Fields(os.Getenv("FLOTILLA_CHAOS_KLUSTERLET_ARGS"))...)

	start := time.Now()
	_, err = devenv.Up(ctx, r.opts)
	require.NoError(t, err, "dev up (see %s)", progress.Name())
	defer func() {
		if _, err := devenv.Down(r.opts); err != nil {
			t.Errorf("dev down: %v", err)
		}
		if !t.Failed() {
			_ = os.RemoveAll(dataDir)
		}
	}()
	t.Logf("chaos: environment up in %s", time.Since(start).Round(time.Millisecond))
	r.connect()
	if nodes {
		r.sharedHubStore() // nodes_test.go
	}
	r.setup()

	memDone := make(chan struct{})
	r.started = time.Now()
	go r.sampleMemory(memDone)

	report := Report{Duration: duration, Clusters: len(r.clusters)}
	deadline := time.Now().Add(duration)
	hubDownAtRotation := false
	for time.Now().Before(deadline) {
		phase := time.Duration(8+r.rng.IntN(12)) * time.Second
		kind := kinds[r.rng.IntN(len(kinds))]
		if nodes && len(report.Faults) == 0 && slices.Contains(kinds, "partition") {
			kind = "partition" // the first: a short run (CI's) has one for sure
		}
		if len(report.Faults) == 1 && slices.Contains(kinds, "apiservers") {
			kind = "apiservers" // the second, so that a short run has one too
		}
		if shortCerts && !hubDownAtRotation {
			// The phase ends in time for the next rotation to fall in an outage.
			if _, due, ok := r.nextRotation(); ok && time.Until(due)-10*time.Second < phase {
				phase = max(time.Until(due)-10*time.Second, 0)
				kind = "hub-down-at-rotation"
			}
		}
		r.workload(phase)
		if !time.Now().Before(deadline) {
			break
		}
		var f Fault
		if kind == "partition" {
			f = r.partition()
		} else {
			f = r.fault(kind)
		}
		hubDownAtRotation = hubDownAtRotation || kind == "hub-down-at-rotation"
		t.Logf("chaos: fault %s (%s): restart %s, converged %v in %s", f.Kind, f.Target,
			f.Restart.Round(time.Millisecond), f.Converged, f.Converge.Round(time.Millisecond))
		report.Faults = append(report.Faults, f)
		if !f.Converged {
			report.Violations = append(report.Violations, Violation{NoConvergence,
				fmt.Sprintf("after killing %s the fleet did not converge within %s: %s", f.Target, convergeBound,
					summarize(r.violations()))})
			t.Logf("chaos: the hub's view when %s did not converge:\n%s%s", f.Target, r.hubView(), r.watchCacheView())
		}
	}
	// The end: everything converges once more and every invariant holds.
	if !r.converge() {
		report.Violations = append(report.Violations, r.violations()...)
	}
	close(memDone)
	report.Violations = append(report.Violations, r.faultViolations...)
	for _, k := range slices.Sorted(maps.Keys(r.held)) {
		report.Violations = append(report.Violations, r.held[k])
	}
	report.Violations = append(report.Violations, r.panics(dataDir)...)
	r.mu.Lock()
	report.Memory = map[string]Memory{}
	for name, m := range r.memory {
		report.Memory[name] = *m
		if strings.HasSuffix(name, "/flotilla") && m.Peak > memoryBound {
			report.Violations = append(report.Violations, Violation{MemoryBound, fmt.Sprintf("%s peaked at %d MiB (bound %d MiB)", name, m.Peak>>20, memoryBound>>20)})
		}
	}
	r.mu.Unlock()
	report.Ops = r.ops
	report.Ops["rotation"] = r.rotations
	if shortCerts {
		report.Violations = append(report.Violations, r.rotationLag()...)
		if !hubDownAtRotation && !restricted {
			report.Violations = append(report.Violations, Violation{Stale, "no rotation fell while the hub was down: run longer"})
		}
	}

	var b strings.Builder
	report.Write(&b)
	fmt.Println(b.String())
	if out := os.Getenv("FLOTILLA_CHAOS_REPORT"); out != "" {
		require.NoError(t, os.WriteFile(out, []byte(b.String()), 0o644))
	}
	if len(report.Violations) > 0 {
		t.Fatalf("%d invariant violations (environment and logs kept in %s)", len(report.Violations), dataDir)
	}
}

func (r *run) connect() {
	cfg, err := clientcmd.BuildConfigFromFlags("", r.opts.HubKubeconfig())
	require.NoError(r.t, err)
	cfg.Timeout = 15 * time.Second
	r.hubCfg = cfg
	r.hubKube = kubernetes.NewForConfigOrDie(cfg)
	r.works = workclient.NewForConfigOrDie(cfg)
	r.hubOCM = clusterclient.NewForConfigOrDie(cfg)
	for _, c := range r.clusters {
		sc, err := clientcmd.BuildConfigFromFlags("", r.opts.ClusterKubeconfig(c))
		require.NoError(r.t, err)
		sc.Timeout = 15 * time.Second
		r.spokes[c] = kubernetes.NewForConfigOrDie(sc)
		r.spokeWorks[c] = workclient.NewForConfigOrDie(sc)
		r.spokeCfgs[c] = sc
		r.live[c] = map[string]int{}
	}
}

// setup shortens the heartbeat and places a ManifestWorkReplicaSet on every
// cluster (set global, bound to namespace chaos).
func (r *run) setup() {
	ctx := r.ctx
	for _, c := range r.clusters {
		_, err := r.hubOCM.ClusterV1().ManagedClusters().Patch(ctx, c, types.MergePatchType,
			[]byte(fmt.Sprintf(`{"spec":{"leaseDurationSeconds":%d}}`, leaseSeconds)), metav1.PatchOptions{})
		require.NoError(r.t, err)
	}
	kube := kubernetes.NewForConfigOrDie(r.hubCfg)
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rsNamespace}}, metav1.CreateOptions{})
	require.NoError(r.t, err)
	_, err = r.hubOCM.ClusterV1beta2().ManagedClusterSetBindings(rsNamespace).Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "global", Namespace: rsNamespace},
		Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"}}, metav1.CreateOptions{})
	require.NoError(r.t, err)
	_, err = r.hubOCM.ClusterV1beta1().Placements(rsNamespace).Create(ctx, &clusterv1beta1.Placement{
		ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: rsNamespace},
		Spec:       clusterv1beta1.PlacementSpec{ClusterSets: []string{"global"}}}, metav1.CreateOptions{})
	require.NoError(r.t, err)
	r.rsVersion = 1
	_, err = r.works.WorkV1alpha1().ManifestWorkReplicaSets(rsNamespace).Create(ctx, &workv1alpha1.ManifestWorkReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: rsName, Namespace: rsNamespace},
		Spec: workv1alpha1.ManifestWorkReplicaSetSpec{
			ManifestWorkTemplate: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
				manifest("", rsName, r.rsVersion)}}},
			PlacementRefs: []workv1alpha1.LocalPlacementReference{{Name: "all",
				RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}}},
		}}, metav1.CreateOptions{})
	require.NoError(r.t, err)
	r.setupGovernance()
	require.True(r.t, r.converge(), "the fresh environment converges: %s", summarize(r.violations()))
}

// manifest is a ConfigMap in namespace default; cluster is empty for the
// replica set's object, which is the same on every cluster.
func manifest(cluster, name string, version int) workv1.Manifest {
	data := map[string]string{"version": strconv.Itoa(version)}
	if cluster != "" {
		data[ClusterKey] = cluster
	}
	raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "default", "labels": map[string]string{objectLabel: "true"}},
		"data":     data})
	return workv1.Manifest{RawExtension: kruntime.RawExtension{Raw: raw}}
}

// workload changes works for d: creates, updates, deletes across clusters and
// now and then a replica-set rollout, about five operations a second.
func (r *run) workload(d time.Duration) {
	end := time.Now().Add(d)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(end) {
		<-tick.C
		c := r.clusters[r.rng.IntN(len(r.clusters))]
		names := slices.Sorted(maps.Keys(r.live[c]))
		switch p := r.rng.IntN(100); {
		case p < 5:
			r.rollout()
		case p < 9:
			r.policyOp()
		case p < 11:
			r.addonOp()
		case p < 35 && len(names) < worksPerCluster || len(names) == 0:
			r.seq++
			name := fmt.Sprintf("chaos-%d", r.seq)
			w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c},
				Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{manifest(c, name, 1)}}}}
			if _, err := r.works.WorkV1().ManifestWorks(c).Create(r.ctx, w, metav1.CreateOptions{}); err != nil {
				r.ops["create-failed"]++
				continue
			}
			r.ops["create"]++
			r.live[c][name] = 1
		case p < 80:
			name := names[r.rng.IntN(len(names))]
			v := r.live[c][name] + 1
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				w, err := r.works.WorkV1().ManifestWorks(c).Get(r.ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				w.Spec.Workload.Manifests = []workv1.Manifest{manifest(c, name, v)}
				_, err = r.works.WorkV1().ManifestWorks(c).Update(r.ctx, w, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				r.ops["update-failed"]++
				continue
			}
			r.ops["update"]++
			r.live[c][name] = v
		default:
			name := names[r.rng.IntN(len(names))]
			if err := r.works.WorkV1().ManifestWorks(c).Delete(r.ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				r.ops["delete-failed"]++
				continue
			}
			r.ops["delete"]++
			delete(r.live[c], name)
		}
	}
}

func (r *run) rollout() {
	v := r.rsVersion + 1
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs, err := r.works.WorkV1alpha1().ManifestWorkReplicaSets(rsNamespace).Get(r.ctx, rsName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		rs.Spec.ManifestWorkTemplate.Workload.Manifests = []workv1.Manifest{manifest("", rsName, v)}
		_, err = r.works.WorkV1alpha1().ManifestWorkReplicaSets(rsNamespace).Update(r.ctx, rs, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		r.ops["rollout-failed"]++
		return
	}
	r.ops["rollout"]++
	r.rsVersion = v
}

// fault kills one component of the given kind, lets the supervisor (dev up)
// restart it after a short outage, and measures the time to converge.
func (r *run) fault(kind string) Fault {
	st, err := devenv.Get(r.opts)
	require.NoError(r.t, err)
	var target string
	var pid int
	switch {
	case r.nodes && (kind == "hub" || kind == "klusterlet" || kind == "addon-agent"):
		target, err = r.podFault(kind)
		require.NoError(r.t, err, "kill %s", kind)
	case kind == "hub":
		target, pid = "hub", pidOf(st, "hub", "flotilla")
	case kind == "klusterlet":
		c := r.clusters[r.rng.IntN(len(r.clusters))]
		target, pid = "klusterlet-"+c, pidOf(st, "klusterlet-"+c, "flotilla")
	case kind == "cluster-apiserver":
		c := r.clusters[r.rng.IntN(len(r.clusters))]
		target, pid = c+"/kube-apiserver", pidOf(st, c, "kube-apiserver")
	case kind == "hub-etcd":
		target, pid = "hub/etcd", pidOf(st, "hub", "etcd")
	case kind == "apiservers":
		// The hub's apiserver and a cluster's at once, while every agent
		// holds watches on both: each agent must notice and list afresh.
		c := r.clusters[r.rng.IntN(len(r.clusters))]
		target = "hub/kube-apiserver and " + c + "/kube-apiserver"
		for _, cp := range []string{"hub", c} {
			p := pidOf(st, cp, "kube-apiserver")
			require.NotZero(r.t, p, "no kube-apiserver of %s", cp)
			require.NoError(r.t, syscall.Kill(p, syscall.SIGKILL))
			require.NoError(r.t, wait.PollUntilContextTimeout(r.ctx, 100*time.Millisecond, time.Minute, true,
				func(context.Context) (bool, error) { return syscall.Kill(p, 0) != nil, nil }), "%s/kube-apiserver (pid %d) did not die", cp, p)
		}
	case kind == "addon-agent":
		c := r.clusters[r.rng.IntN(len(r.clusters))]
		agents := r.killableAgents()
		a := agents[r.rng.IntN(len(agents))]
		target = "klusterlet-" + c + "-addon-" + a
		pid = pidOf(st, target, "flotilla")
	case kind == "hub-down-at-rotation":
		// The hub's control plane goes down before a certificate is due (the
		// workload phase ended ten seconds early for it) and stays down until
		// the agent has tried to rotate: it must rotate late, not never.
		c, _, _ := r.nextRotation()
		attempts := r.rotationAttempts(c)
		target = "hub control plane, over a rotation of " + c
		for _, comp := range []string{"kube-apiserver", "etcd"} {
			if p := pidOf(st, "hub", comp); p != 0 {
				require.NoError(r.t, syscall.Kill(p, syscall.SIGKILL))
			}
		}
		require.NoError(r.t, wait.PollUntilContextTimeout(r.ctx, 250*time.Millisecond, 2*time.Minute, true,
			func(context.Context) (bool, error) { return r.rotationAttempts(c) > attempts, nil }),
			"klusterlet-%s did not try to rotate its certificate while the hub was down", c)
	}
	killed := time.Now()
	if pid != 0 {
		require.NoError(r.t, syscall.Kill(pid, syscall.SIGKILL))
		// The outage lasts until the process is gone; then the supervisor restarts it.
		require.NoError(r.t, wait.PollUntilContextTimeout(r.ctx, 100*time.Millisecond, time.Minute, true,
			func(context.Context) (bool, error) { return syscall.Kill(pid, 0) != nil, nil }), "%s (pid %d) did not die", target, pid)
	}

	f := Fault{Kind: kind, Target: target}
	start := time.Now()
	if _, err := devenv.Up(r.ctx, r.opts); err != nil {
		// A supervisor tries again; a second failure ends the run.
		r.t.Logf("chaos: dev up after killing %s: %v; trying again", target, err)
		_, err = devenv.Up(r.ctx, r.opts)
		require.NoError(r.t, err, "dev up after killing %s", target)
	}
	f.Restart = time.Since(start)
	f.Converged = r.converge()
	if f.Converged {
		f.Converge = time.Since(killed)
	}
	return f
}

func pidOf(st *devenv.Status, component, process string) int {
	for _, c := range st.Components {
		if c.Name == component {
			return c.PIDs[process]
		}
	}
	return 0
}

// converge waits until no invariant is violated, at most convergeBound, then
// re-reads which works live (a write whose answer was lost may have landed).
func (r *run) converge() bool {
	start, told := time.Now(), false
	err := wait.PollUntilContextTimeout(r.ctx, 250*time.Millisecond, convergeBound, true,
		func(context.Context) (bool, error) {
			v := r.violations()
			if len(v) > 0 && !told && time.Since(start) > slowConverge {
				// Seen while it lasts: what the hub and its apiserver hold.
				told = true
				r.t.Logf("chaos: not converged after %s: %s\n%s%s", slowConverge, summarize(v), r.hubView(), r.watchCacheView())
			}
			return len(v) == 0, nil
		})
	r.relist()
	return err == nil
}

func (r *run) relist() {
	for _, c := range r.clusters {
		list, err := r.works.WorkV1().ManifestWorks(c).List(r.ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		live := map[string]int{}
		for _, w := range list.Items {
			if w.Labels[workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey] != "" || w.DeletionTimestamp != nil {
				continue
			}
			for _, o := range objectsOf(c, &w) {
				live[w.Name], _ = strconv.Atoi(o.Data["version"])
			}
		}
		r.live[c] = live
	}
}

// violations reads the hub and every cluster and checks the invariants.
func (r *run) violations() []Violation {
	var expected, observed []Object
	var out []Violation
	decided := map[string]bool{}
	decisions, err := r.hubOCM.ClusterV1beta1().PlacementDecisions(rsNamespace).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		return []Violation{{Stale, "cannot read the placement decisions: " + err.Error()}}
	}
	for _, d := range decisions.Items {
		for _, cd := range d.Status.Decisions {
			decided[cd.ClusterName] = true
		}
	}
	for _, c := range r.clusters {
		if !decided[c] {
			out = append(out, Violation{Stale, "placement chaos/all does not decide " + c})
		} else {
			expected = append(expected, Object{Cluster: c, Namespace: "default", Name: rsName, Work: "replicaset " + rsName,
				Data: map[string]string{"version": strconv.Itoa(r.rsVersion)}})
		}
		list, err := r.works.WorkV1().ManifestWorks(c).List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return append(out, Violation{Stale, "cannot list the works of " + c + ": " + err.Error()})
		}
		for _, w := range list.Items {
			objs := objectsOf(c, &w)
			if len(objs) == 0 {
				continue
			}
			applied := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
			switch {
			case w.DeletionTimestamp != nil:
				out = append(out, Violation{Stale, fmt.Sprintf("work %s/%s is still being deleted", c, w.Name)})
			case applied == nil || applied.Status != metav1.ConditionTrue || applied.ObservedGeneration != w.Generation:
				out = append(out, Violation{Stale, fmt.Sprintf("work %s/%s is not Applied at generation %d", c, w.Name, w.Generation)})
			}
			if w.Labels[workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey] != "" {
				continue // wanted by the replica set: expected above from its template
			}
			expected = append(expected, objs...)
		}
		cms, err := r.spokes[c].CoreV1().ConfigMaps("default").List(r.ctx, metav1.ListOptions{LabelSelector: objectLabel + "=true"})
		if err != nil {
			return append(out, Violation{Stale, "cannot list the objects on " + c + ": " + err.Error()})
		}
		amws, err := r.spokeWorks[c].WorkV1().AppliedManifestWorks().List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return append(out, Violation{Stale, "cannot list the AppliedManifestWorks of " + c + ": " + err.Error()})
		}
		evicting := map[types.UID]time.Time{}
		for _, a := range amws.Items {
			if a.Status.EvictionStartTime != nil {
				evicting[a.UID] = a.Status.EvictionStartTime.Time
			}
		}
		for _, cm := range cms.Items {
			o := Object{Cluster: c, Namespace: cm.Namespace, Name: cm.Name, Data: cm.Data}
			for _, ref := range cm.OwnerReferences {
				if since, ok := evicting[ref.UID]; ok && ref.Kind == "AppliedManifestWork" {
					o.HeldSince = since
				}
			}
			observed = append(observed, o)
		}
	}
	observed, held := Held(expected, observed)
	for k, v := range held {
		if _, seen := r.held[k]; !seen {
			r.t.Logf("chaos: %s", v)
			r.held[k] = v
		}
	}
	out = append(out, Check(expected, observed)...)
	if r.nodes {
		out = append(out, r.clusterViolations()...)
	}
	out = append(out, r.searchViolations(observed)...)
	return append(out, r.governanceViolations()...)
}

// searchViolations compares the run's objects on the clusters with what
// the hub's search index finds for them (docs/search.md).
func (r *run) searchViolations(observed []Object) []Violation {
	c, err := searchapi.NewClient(r.hubCfg)
	if err != nil {
		return []Violation{{Search, err.Error()}}
	}
	l, err := c.List(r.ctx, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "default", url.Values{"labelSelector": {objectLabel + "=true"}})
	if err != nil {
		return []Violation{{Search, "cannot search the run's objects: " + err.Error()}}
	}
	var indexed []Object
	for _, u := range l.Items {
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		indexed = append(indexed, Object{Cluster: u.GetAnnotations()[apigroup.ClusterLabel], Namespace: u.GetNamespace(), Name: u.GetName(), Data: data})
	}
	return SearchCheck(observed, indexed)
}

// objectsOf returns the run's objects a work carries.
func objectsOf(cluster string, w *workv1.ManifestWork) []Object {
	var out []Object
	for _, m := range w.Spec.Workload.Manifests {
		var cm corev1.ConfigMap
		if json.Unmarshal(m.Raw, &cm) != nil || cm.Labels[objectLabel] != "true" {
			continue
		}
		out = append(out, Object{Cluster: cluster, Namespace: cm.Namespace, Name: cm.Name, Data: cm.Data, Work: w.Name})
	}
	return out
}

// sampleMemory records the peak RSS of every process of the environment.
func (r *run) sampleMemory(done <-chan struct{}) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		r.trackRotations()
		if r.nodes {
			r.podRSS()
		}
		st, err := devenv.Get(r.opts)
		if err != nil {
			continue
		}
		for _, c := range st.Components {
			for proc, pid := range c.PIDs {
				r.recordRSS(c.Name+"/"+proc, rssOf(pid))
			}
		}
	}
}

// recordRSS adds a sample of a process's RSS to what the run saw of it.
func (r *run) recordRSS(name string, rss int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.memory[name]
	if m == nil {
		m = &Memory{}
		r.memory[name] = m
	}
	elapsed := time.Duration(0)
	if !r.started.IsZero() {
		elapsed = time.Since(r.started)
	}
	m.Add(rss, elapsed, r.duration)
}

func rssOf(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// panics scans every log of the environment for crashes.
func (r *run) panics(dataDir string) []Violation {
	var out []Violation
	_ = filepath.WalkDir(dataDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for _, l := range PanicLines(string(b)) {
			out = append(out, Violation{Panic, fmt.Sprintf("%s: %s", strings.TrimPrefix(path, dataDir+"/"), l)})
		}
		return nil
	})
	return out
}

func summarize(vs []Violation) string {
	if len(vs) == 0 {
		return "none"
	}
	parts := make([]string, 0, 5)
	for i, v := range vs {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(vs)-5))
			break
		}
		parts = append(parts, v.String())
	}
	return strings.Join(parts, "; ")
}

// hubCert reads a cluster's current hub client certificate from its agent's secret.
func (r *run) hubCert(cluster string) (*x509.Certificate, error) {
	sec, err := r.spokes[cluster].CoreV1().Secrets(registration.DefaultAgentNamespace).Get(r.ctx, registration.HubKubeconfigSecret, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(sec.Data[registration.KeyCert])
	if block == nil {
		return nil, fmt.Errorf("%s: %s has no certificate", cluster, registration.HubKubeconfigSecret)
	}
	return x509.ParseCertificate(block.Bytes)
}

// nextRotation is the cluster whose certificate is due for renewal first, and when.
func (r *run) nextRotation() (string, time.Time, bool) {
	var next time.Time
	var cluster string
	for _, c := range r.clusters {
		cert, err := r.hubCert(c)
		if err != nil {
			continue
		}
		if due := registration.RotationDue(cert, registration.DefaultRotationFraction); next.IsZero() || due.Before(next) {
			next, cluster = due, c
		}
	}
	return cluster, next, !next.IsZero() && next.After(time.Now())
}

// rotationAttempts counts the rotations cluster's klusterlet has started, from its log.
func (r *run) rotationAttempts(cluster string) int {
	b, _ := os.ReadFile(filepath.Join(r.opts.DataDir, "logs", "klusterlet-"+cluster+".log"))
	return strings.Count(string(b), "rotating the hub client certificate")
}

// trackRotations counts new certificate serials (called by the sampler).
func (r *run) trackRotations() {
	for _, c := range r.clusters {
		cert, err := r.hubCert(c)
		if err != nil {
			continue
		}
		r.mu.Lock()
		if r.serials[c] == nil {
			r.serials[c] = map[string]bool{}
		}
		if s := cert.SerialNumber.String(); !r.serials[c][s] {
			if len(r.serials[c]) > 0 {
				r.rotations++
			}
			r.serials[c][s] = true
		}
		r.mu.Unlock()
	}
}

// rotationLag reports clusters whose certificate is overdue by more than two
// minutes at the end of the run: a rotation that never happened.
func (r *run) rotationLag() []Violation {
	var out []Violation
	for _, c := range r.clusters {
		cert, err := r.hubCert(c)
		if err != nil {
			out = append(out, Violation{Stale, "cannot read the hub certificate of " + c + ": " + err.Error()})
			continue
		}
		if due := registration.RotationDue(cert, registration.DefaultRotationFraction); time.Since(due) > 2*time.Minute {
			out = append(out, Violation{Stale, fmt.Sprintf("%s: the hub certificate was due for rotation at %s and was not rotated", c, due.Format(time.RFC3339))})
		}
	}
	return out
}

// hubView is what the hub says of each cluster (Available, taints, lease
// renewal) and what Placement chaos/all decided, read afresh: the state to
// look at when the fleet did not converge.
func (r *run) hubView() string {
	var b strings.Builder
	for _, c := range r.clusters {
		mc, err := r.hubOCM.ClusterV1().ManagedClusters().Get(r.ctx, c, metav1.GetOptions{})
		if err != nil {
			fmt.Fprintf(&b, "  %s: %v\n", c, err)
			continue
		}
		avail := "none"
		if cond := meta.FindStatusCondition(mc.Status.Conditions, "ManagedClusterConditionAvailable"); cond != nil {
			avail = fmt.Sprintf("%s/%s since %s", cond.Status, cond.Reason, cond.LastTransitionTime.UTC().Format(time.RFC3339))
		}
		var taints []string
		for _, tn := range mc.Spec.Taints {
			taints = append(taints, tn.Key)
		}
		renewed := "no lease"
		if l, err := r.hubKube.CoordinationV1().Leases(c).Get(r.ctx, "managed-cluster-lease", metav1.GetOptions{}); err == nil && l.Spec.RenewTime != nil {
			renewed = l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
		}
		fmt.Fprintf(&b, "  %s: Available %s; taints %v; lease renewed %s\n", c, avail, taints, renewed)
	}
	decisions, err := r.hubOCM.ClusterV1beta1().PlacementDecisions(rsNamespace).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(&b, "  placement decisions: %v\n", err)
		return b.String()
	}
	for _, d := range decisions.Items {
		var names []string
		for _, cd := range d.Status.Decisions {
			names = append(names, cd.ClusterName)
		}
		fmt.Fprintf(&b, "  PlacementDecision %s: %v\n", d.Name, names)
	}
	return b.String()
}

// chooseKinds reads FLOTILLA_CHAOS_FAULTS: a comma-separated subset of the
// mode's fault kinds, to weight a run towards the faults under study.
func chooseKinds(v string, all []string) ([]string, error) {
	var kinds []string
	for _, k := range strings.Split(v, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(all, k) {
			return nil, fmt.Errorf("%q is not a fault kind of this mode (one of %s)", k, strings.Join(all, ", "))
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}

// watchCacheView compares what the hub apiserver's watch cache serves (a list
// at resourceVersion 0) with a consistent read, resource by resource: objects
// whose cached version differs show a cache that stopped following etcd, and
// every informer watching through it is as stale.
func (r *run) watchCacheView() string {
	var b strings.Builder
	b.WriteString("  the apiserver's watch cache against a consistent read:\n")
	// versions lists at rv and returns the list's version and each object's.
	versions := func(list func(metav1.ListOptions) (kruntime.Object, error), rv string) (string, map[string]string, error) {
		l, err := list(metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			return "", nil, err
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return "", nil, err
		}
		m := map[string]string{}
		for _, o := range items {
			if a, err := meta.Accessor(o); err == nil {
				m[a.GetNamespace()+"/"+a.GetName()] = a.GetResourceVersion()
			}
		}
		la, err := meta.ListAccessor(l)
		if err != nil {
			return "", nil, err
		}
		return la.GetResourceVersion(), m, nil
	}
	check := func(what string, list func(metav1.ListOptions) (kruntime.Object, error)) {
		cachedRV, cached, err := versions(list, "0")
		if err != nil {
			fmt.Fprintf(&b, "    %s: cached list: %v\n", what, err)
			return
		}
		freshRV, fresh, err := versions(list, "")
		if err != nil {
			fmt.Fprintf(&b, "    %s: consistent list: %v\n", what, err)
			return
		}
		var differ []string
		for _, k := range slices.Sorted(maps.Keys(fresh)) {
			if cached[k] != fresh[k] {
				differ = append(differ, fmt.Sprintf("%s cached %q, stored %q", k, cached[k], fresh[k]))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(cached)) {
			if _, ok := fresh[k]; !ok {
				differ = append(differ, fmt.Sprintf("%s cached %q, gone", k, cached[k]))
			}
		}
		fmt.Fprintf(&b, "    %s: cache at %s, etcd at %s, %d of %d objects differ %v\n", what, cachedRV, freshRV, len(differ), len(fresh), differ)
	}
	check("managedclusters", func(o metav1.ListOptions) (kruntime.Object, error) {
		return r.hubOCM.ClusterV1().ManagedClusters().List(r.ctx, o)
	})
	for _, c := range r.clusters {
		check("leases in "+c, func(o metav1.ListOptions) (kruntime.Object, error) {
			return r.hubKube.CoordinationV1().Leases(c).List(r.ctx, o)
		})
		check("manifestworks in "+c, func(o metav1.ListOptions) (kruntime.Object, error) {
			return r.works.WorkV1().ManifestWorks(c).List(r.ctx, o)
		})
	}
	check("placementdecisions", func(o metav1.ListOptions) (kruntime.Object, error) {
		return r.hubOCM.ClusterV1beta1().PlacementDecisions(rsNamespace).List(r.ctx, o)
	})
	check("placements", func(o metav1.ListOptions) (kruntime.Object, error) {
		return r.hubOCM.ClusterV1beta1().Placements(rsNamespace).List(r.ctx, o)
	})
	return b.String()
}
