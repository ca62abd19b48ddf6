//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/devenv"
	"flotilla.dev/flotilla/devenv/node"
	"flotilla.dev/flotilla/hub/deploy"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/pgtest"
	"flotilla.dev/flotilla/klusterlet/registration"
)

// The nodes mode (FLOTILLA_CHAOS_NODES=1, `make chaos CHAOS_NODES=1`): the
// environment is `dev up --nodes`, so the hub, the klusterlets and the addon
// agents are Pods on real nodes, and a partition between the hub and a
// cluster (`dev partition`, iptables rules the run makes and removes) is one
// more fault kind.

// nodesFaultKinds are the faults of the nodes mode: the Pod-borne components
// are killed in their Pods, the control planes as before.
var nodesFaultKinds = []string{"hub", "klusterlet", "cluster-apiserver", "hub-etcd", "addon-agent", "partition", "apiservers"}

const (
	// unknownBound is how long the hub may take to mark a partitioned cluster
	// Unknown and tainted (the lease is leaseSeconds; the hub waits five of them).
	unknownBound = 2 * time.Minute
	// partitionMin and partitionSpread bound how long a partition lasts.
	partitionMin    = 45 * time.Second
	partitionSpread = 30 // seconds
)

// killPods kills the Pods of one component: SIGKILL to every process of the
// Pod (found by the Pod's cgroup), then the Pod is deleted at once, so that
// its Deployment makes a new one without the kubelet's crash back-off (which
// would grow with every kill of a long run). It returns what it killed.
func (r *run) killPods(cs kubernetes.Interface, namespace, selector string) (string, error) {
	// The Pod of a Deployment made again by the last fault may still be on its way.
	var pods *corev1.PodList
	err := wait.PollUntilContextTimeout(r.ctx, 250*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		var err error
		pods, err = cs.CoreV1().Pods(namespace).List(r.ctx, metav1.ListOptions{LabelSelector: selector})
		return err == nil && slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp == nil }), nil
	})
	if err != nil {
		return "", fmt.Errorf("no Pod %s in %s to kill: %w", selector, namespace, err)
	}
	var killed []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		pids := podPIDs(string(p.UID))
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		// The Pod's logs go with it: read them for panics first.
		r.faultViolations = append(r.faultViolations, r.podPanics(string(p.UID))...)
		if err := cs.CoreV1().Pods(namespace).Delete(r.ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			return "", err
		}
		killed = append(killed, fmt.Sprintf("%s/%s (pids %v)", namespace, p.Name, pids))
	}
	if len(killed) == 0 {
		return "", fmt.Errorf("no Pod %s in %s", selector, namespace)
	}
	return strings.Join(killed, ", "), nil
}

// podPanics scans the logs of a Pod (on any node) for crashes.
func (r *run) podPanics(uid string) []Violation {
	var out []Violation
	logs, _ := filepath.Glob(filepath.Join(r.opts.DataDir, "nodes", "*", "pod-logs", "*_"+uid, "*", "*.log"))
	for _, path := range logs {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, l := range PanicLines(string(b)) {
			out = append(out, Violation{Panic, fmt.Sprintf("%s: %s", strings.TrimPrefix(path, r.opts.DataDir+"/"), l)})
		}
	}
	return out
}

// podPIDs finds the processes of a Pod by its cgroup (cgroupfs driver:
// .../pod<uid>/<container>).
func podPIDs(uid string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err == nil && (strings.Contains(string(b), "/pod"+uid+"/") || strings.Contains(string(b), "pod"+strings.ReplaceAll(uid, "-", "_"))) {
			out = append(out, pid)
		}
	}
	return out
}

// podFault kills the hub's Pods, a cluster's klusterlet Pod or one of its
// addon agents' Pods; the Deployments bring them back.
func (r *run) podFault(kind string) (string, error) {
	c := r.clusters[r.rng.IntN(len(r.clusters))]
	switch kind {
	case "hub":
		t, err := r.killPods(r.hubKube, deploy.Namespace, "app="+deploy.Name)
		return "hub Pods " + t, err
	case "klusterlet":
		return r.killPods(r.spokes[c], registration.DefaultAgentNamespace, "app=klusterlet")
	default: // addon-agent
		var running []string
		for _, a := range r.killableAgents() {
			if a != exampleAddon || r.gov.example[c] {
				running = append(running, a)
			}
		}
		a := running[r.rng.IntN(len(running))]
		return r.killPods(r.spokes[c], ocm.DefaultAddonInstallNamespace, "app="+a+"-agent")
	}
}

// partition cuts a cluster off the hub for a while, with the workload going
// on, and checks on the way: the hub marks the cluster Unknown and tainted
// unreachable, and the cluster keeps running what it runs (its objects stay
// as they were, its klusterlet Pod keeps running). After the heal the fleet
// converges as after any fault (the works made meanwhile applied, the cluster
// Available and untainted); Converge is measured from the heal.
func (r *run) partition() Fault {
	c := r.clusters[r.rng.IntN(len(r.clusters))]
	f := Fault{Kind: "partition", Target: c}
	require.NoError(r.t, devenv.Partition(r.opts, c))
	start := time.Now()
	healed := false
	heal := func() {
		if !healed {
			require.NoError(r.t, devenv.Heal(r.opts, c))
			healed = true
		}
	}
	defer heal()

	err := wait.PollUntilContextTimeout(r.ctx, 250*time.Millisecond, unknownBound, true, func(context.Context) (bool, error) {
		mc, err := r.hubOCM.ClusterV1().ManagedClusters().Get(r.ctx, c, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cond := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
		return cond != nil && cond.Status == metav1.ConditionUnknown && unreachable(mc), nil
	})
	if err != nil {
		r.faultViolations = append(r.faultViolations, Violation{Partition,
			fmt.Sprintf("%s was cut off from the hub and not marked Unknown and tainted %s within %s", c, clusterv1.ManagedClusterTaintUnreachable, unknownBound)})
	} else {
		f.Restart = time.Since(start) // the column's "detect" for a partition
	}
	// What the cluster runs once the hub has noticed (anything the agents
	// had received before the cut has landed by then) must stay as it is
	// while the workload goes on (works for the cut-off cluster wait on the hub).
	before, err := r.spokeObjects(c)
	require.NoError(r.t, err, "read the objects of %s", c)
	rest := partitionMin + time.Duration(r.rng.IntN(partitionSpread))*time.Second - time.Since(start)
	r.workload(max(rest, 0))
	during, err := r.spokeObjects(c)
	switch {
	case err != nil:
		r.faultViolations = append(r.faultViolations, Violation{Partition, fmt.Sprintf("%s unreadable during its partition: %v", c, err)})
	default:
		for k, v := range before {
			if during[k] != v {
				r.faultViolations = append(r.faultViolations, Violation{Partition,
					fmt.Sprintf("%s changed %s during its partition (had %q, has %q): what a cut-off cluster runs must keep running", c, k, v, during[k])})
			}
		}
	}
	pods, err := r.spokes[c].CoreV1().Pods(registration.DefaultAgentNamespace).List(r.ctx, metav1.ListOptions{LabelSelector: "app=klusterlet"})
	if err != nil || !slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }) {
		r.faultViolations = append(r.faultViolations, Violation{Partition, fmt.Sprintf("no klusterlet Pod runs on %s during its partition (%v)", c, err)})
	}
	heal()
	healedAt := time.Now()
	f.Converged = r.converge()
	if f.Converged {
		f.Converge = time.Since(healedAt)
	}
	return f
}

// spokeObjects reads the run's objects on a cluster: name -> version.
func (r *run) spokeObjects(c string) (map[string]string, error) {
	cms, err := r.spokes[c].CoreV1().ConfigMaps("default").List(r.ctx, metav1.ListOptions{LabelSelector: objectLabel + "=true"})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, cm := range cms.Items {
		out[cm.Name] = cm.Data["version"]
	}
	return out, nil
}

func unreachable(mc *clusterv1.ManagedCluster) bool {
	return slices.ContainsFunc(mc.Spec.Taints, func(t clusterv1.Taint) bool { return t.Key == clusterv1.ManagedClusterTaintUnreachable })
}

// clusterViolations: every cluster Available, without the unreachable
// taint (in the nodes mode, where a partition takes both away) and its agent
// renewing its lease at the period the run set (a restarted klusterlet starts
// on its default period and is marked Unknown until it catches up).
func (r *run) clusterViolations() []Violation {
	var out []Violation
	for _, c := range r.clusters {
		mc, err := r.hubOCM.ClusterV1().ManagedClusters().Get(r.ctx, c, metav1.GetOptions{})
		if err != nil {
			out = append(out, Violation{Stale, "cannot read managed cluster " + c + ": " + err.Error()})
			continue
		}
		if !meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable) {
			out = append(out, Violation{Stale, c + " is not Available"})
		}
		if unreachable(mc) {
			out = append(out, Violation{Stale, c + " is still tainted " + clusterv1.ManagedClusterTaintUnreachable})
		}
		lease, err := r.hubKube.CoordinationV1().Leases(c).Get(r.ctx, registration.LeaseName, metav1.GetOptions{})
		if err != nil {
			out = append(out, Violation{Stale, "cannot read the lease of " + c + ": " + err.Error()})
			continue
		}
		out = append(out, LeasePeriod(c, mc.Spec.LeaseDurationSeconds, lease.Spec.LeaseDurationSeconds)...)
	}
	return out
}

// podRSS records the peak RSS of the Flotilla processes in the nodes' Pods,
// named after their node and subcommand (both hub replicas share a name).
func (r *run) podRSS() {
	plan := node.NewPlan(r.opts.DataDir)
	nodes := append([]string{"hub"}, r.clusters...)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		if len(args) < 2 || filepath.Base(args[0]) != "flotilla" || args[1] == "dev" {
			continue // not Flotilla, or the Pods' pause
		}
		cg, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil {
			continue
		}
		for i, n := range nodes {
			if !strings.Contains(string(cg), plan.CgroupRoot(i)+"/") {
				continue
			}
			what := args[1]
			if what == "addon-agent" && len(args) > 2 {
				what += " " + args[2]
			}
			r.recordRSS(n+"-node/"+what+"/flotilla", rssOf(pid))
		}
	}
}

// hubDBSecret is the Secret of the hub namespace holding the nodes run's
// PostgreSQL URL.
const hubDBSecret = "chaos-hub-db"

// sharedHubStore gives the nodes run's hub Pods one PostgreSQL for their
// compliance history and search index: a throwaway server listening on the
// nodes' bridge address (where the hub apiserver is, so the Pods reach it),
// its URL in a Secret, and the hub rolled out again with it (devenv's
// HubDBSecret, which every later `dev up` of the run keeps). Without it each
// hub Pod would index the agents' posts that reached it in its own SQLite
// file, and the search invariant could not hold.
func (r *run) sharedHubStore() {
	u, err := url.Parse(r.hubCfg.Host)
	require.NoError(r.t, err)
	pg := pgtest.StartWith(r.t, pgtest.Options{Listen: u.Hostname()})
	_, err = r.hubKube.CoreV1().Secrets(deploy.Namespace).Create(r.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: hubDBSecret},
		StringData: map[string]string{deploy.ComplianceDBKey: pg.NewDatabase(r.t)},
	}, metav1.CreateOptions{})
	require.NoError(r.t, err)
	r.opts.HubDBSecret = hubDBSecret
	start := time.Now()
	_, err = devenv.Up(r.ctx, r.opts)
	require.NoError(r.t, err, "dev up with the hub's PostgreSQL")
	r.t.Logf("chaos: hub Deployment applied with a shared PostgreSQL in %s (its Pods roll out; setup's convergence waits for them)", time.Since(start).Round(time.Millisecond))
}
