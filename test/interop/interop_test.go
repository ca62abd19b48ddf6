//go:build interop && linux

package interop

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/hub/registration/bootstrap"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/test/fleet"
	"flotilla.dev/flotilla/test/testenv"
)

var (
	upstreamBin  = flag.String("interop.upstream-bin", "", "directory with upstream registration, work and clusteradm (default: <module>/.upstream/bin, built from upstream's public source beforehand)")
	availableFor = flag.Duration("interop.available-for", 5*time.Minute, "how long an upstream agent on a Flotilla hub must stay Available with its lease renewed")
)

const (
	timeout = 3 * time.Minute
	poll    = time.Second
)

// eventually polls f until it is true, ctx ends or d passes; the error says
// what f saw last.
func eventually(ctx context.Context, d time.Duration, what string, f func() (bool, string)) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, poll, d, true, func(context.Context) (bool, error) {
		ok, seen := f()
		last = seen
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("%s: not within %s (last seen: %s)", what, d, last)
	}
	return nil
}

func conditionString(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return typ + " missing"
	}
	return fmt.Sprintf("%s=%s (%s: %s)", typ, c.Status, c.Reason, c.Message)
}

func moduleRoot() string {
	dir, _ := os.Getwd()
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	return dir
}

// TestInterop runs every check and prints the table.
func TestInterop(t *testing.T) {
	ctrl.SetLogger(klog.Background())
	root := moduleRoot()
	bin := *upstreamBin
	if bin == "" {
		bin = filepath.Join(root, ".upstream", "bin")
	}
	for _, b := range []string{"registration", "work", "clusteradm"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("upstream %s not found in %s: build upstream OCM from its public source into .upstream/bin first (docs/interop.md): %v", b, bin, err)
		}
	}
	commits, _ := os.ReadFile(filepath.Join(bin, "COMMITS"))
	logs := filepath.Join(root, ".upstream", "interop-logs")
	_ = os.RemoveAll(logs)
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	up := upstream{bin: bin, logs: logs}
	r := &report{}
	t.Cleanup(func() {
		var b strings.Builder
		r.print(&b, "Interop with upstream OCM ("+strings.ReplaceAll(strings.TrimSpace(string(commits)), "\n", ", ")+"); logs in "+logs)
		fmt.Println(b.String())
		_ = os.WriteFile(filepath.Join(root, ".upstream", "interop-report.txt"), []byte(b.String()), 0o644)
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// A Flotilla hub with one managed cluster for upstream's agents, and an
	// upstream hub with one managed cluster for Flotilla's klusterlet.
	flotillaEnv := testenv.Start(t, testenv.Options{Clusters: 1})
	upstreamEnv := testenv.Start(t, testenv.Options{Clusters: 1, HubCRDs: []string{}})

	a := &upstreamAgents{t: t, r: r, up: up, env: flotillaEnv, cluster: "upstream1"}
	if !a.setup(ctx) {
		return
	}
	// The availability window runs while the other checks do.
	window := a.watchAvailable(ctx, *availableFor)
	a.clusteradmVerbs(ctx)
	a.work(ctx)
	a.addonsV1beta1(ctx)

	f := &flotillaOnUpstream{t: t, r: r, up: up, env: upstreamEnv, cluster: "flotilla1"}
	f.run(ctx)

	r.check(t, fmt.Sprintf("upstream agent on Flotilla hub: Available for %s, lease renewed", *availableFor), window)
	a.denyAndReaccept(ctx)
}

// upstreamAgents: upstream's registration and work agents joined to a Flotilla hub.
type upstreamAgents struct {
	t          *testing.T
	r          *report
	up         upstream
	env        *testenv.Env
	cluster    string
	hubKC      string // admin kubeconfig of the hub
	agentDir   string // the agent's hub kubeconfig dir
	agentLog   string
	clusters   *clusterclient.Clientset
	works      *workclient.Clientset
	spokeAdmin kubernetes.Interface
	// watches is what the hub apiserver served before the agents started.
	watches map[string]int
}

func (a *upstreamAgents) setup(ctx context.Context) bool {
	t, r := a.t, a.r
	a.hubKC = a.env.Hub.KubeconfigPath
	a.clusters = clusterclient.NewForConfigOrDie(a.env.Hub.Config)
	a.works = workclient.NewForConfigOrDie(a.env.Hub.Config)
	a.spokeAdmin = kubernetes.NewForConfigOrDie(a.env.Clusters[0].Config)

	ok := r.check(t, "Flotilla hub: init and start", func() (string, error) {
		if _, err := bootstrap.Init(ctx, bootstrap.Options{Config: a.env.Hub.Config}); err != nil {
			return "", err
		}
		_, err := fleet.StartHub(ctx, hub.Options{Config: a.env.Hub.Config}, timeout)
		return "", err
	})
	var token string
	ok = ok && r.check(t, "clusteradm get token (Flotilla hub)", func() (string, error) {
		out, err := a.up.clusteradm(ctx, a.hubKC, "get", "token")
		if err != nil {
			return "", err
		}
		token, err = tokenFrom(out)
		return "token from ServiceAccount open-cluster-management/agent-registration-bootstrap", err
	})
	later := []string{"upstream registration agent: accepted with clusteradm accept, Joined, Available"}
	if !ok {
		r.notRun(t, "the Flotilla hub did not start", later...)
		return false
	}
	dir := t.TempDir()
	bootstrapKC := filepath.Join(dir, "bootstrap.kubeconfig")
	a.agentDir = filepath.Join(dir, "hub-kubeconfig")
	if err := tokenKubeconfig(bootstrapKC, a.env.Hub.URL, a.env.Hub.CAPEM, token); err != nil {
		t.Fatal(err)
	}
	if _, err := a.spokeAdmin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management-agent"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	spokeKC := a.env.Clusters[0].KubeconfigPath
	a.watches, _ = hubWatches(ctx, a.env.Hub.Config) // a failure shows in the count's check
	a.agentLog = a.up.start(t, "registration-agent", "registration", "agent",
		"--cluster-name", a.cluster, "--bootstrap-kubeconfig", bootstrapKC, "--hub-kubeconfig-dir", a.agentDir,
		"--spoke-kubeconfig", spokeKC, "--kubeconfig", spokeKC, "--namespace", "open-cluster-management-agent",
		"--spoke-external-server-urls", a.env.Clusters[0].URL, "--disable-leader-election", "--cluster-healthcheck-period", "10s", "--listen", listenFlag(t))

	return r.check(t, later[0], func() (string, error) {
		if err := eventually(ctx, timeout, "ManagedCluster and CSR from the agent", func() (bool, string) {
			_, err := a.clusters.ClusterV1().ManagedClusters().Get(ctx, a.cluster, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			csrs, err := kubernetes.NewForConfigOrDie(a.env.Hub.Config).CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: "open-cluster-management.io/cluster-name=" + a.cluster})
			return err == nil && len(csrs.Items) > 0, fmt.Sprintf("%d CSRs", len(csrs.Items))
		}); err != nil {
			return "", err
		}
		if _, err := a.up.clusteradm(ctx, a.hubKC, "accept", "--clusters", a.cluster); err != nil {
			return "", err
		}
		if err := a.waitAvailable(ctx); err != nil {
			return "", err
		}
		// A short lease makes the availability window meaningful: the hub
		// marks the cluster Unknown after 5 x 10 s without renewal.
		patch := []byte(`{"spec":{"leaseDurationSeconds":10}}`)
		if _, err := a.clusters.ClusterV1().ManagedClusters().Patch(ctx, a.cluster, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return "", err
		}
		return "leaseDurationSeconds set to 10", nil
	})
}

func (a *upstreamAgents) waitAvailable(ctx context.Context) error {
	return eventually(ctx, timeout, "HubAccepted, Joined and Available", func() (bool, string) {
		mc, err := a.clusters.ClusterV1().ManagedClusters().Get(ctx, a.cluster, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := mc.Status.Conditions
		seen := strings.Join([]string{conditionString(c, clusterv1.ManagedClusterConditionHubAccepted), conditionString(c, clusterv1.ManagedClusterConditionJoined), conditionString(c, clusterv1.ManagedClusterConditionAvailable)}, "; ")
		return meta.IsStatusConditionTrue(c, clusterv1.ManagedClusterConditionHubAccepted) && meta.IsStatusConditionTrue(c, clusterv1.ManagedClusterConditionJoined) &&
			meta.IsStatusConditionTrue(c, clusterv1.ManagedClusterConditionAvailable), seen
	})
}

// watchAvailable samples the cluster every 2 s for d; the returned check
// passes when Available was True at every sample and the lease was renewed.
func (a *upstreamAgents) watchAvailable(ctx context.Context, d time.Duration) func() (string, error) {
	var mu sync.Mutex
	var problems []string
	renewals := map[string]bool{}
	start := time.Now()
	done := make(chan struct{})
	leases := kubernetes.NewForConfigOrDie(a.env.Hub.Config).CoordinationV1().Leases(a.cluster)
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for time.Since(start) < d {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			mc, err := a.clusters.ClusterV1().ManagedClusters().Get(ctx, a.cluster, metav1.GetOptions{})
			mu.Lock()
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("%s: %v", time.Since(start).Round(time.Second), err))
			case !meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable):
				problems = append(problems, fmt.Sprintf("%s: %s", time.Since(start).Round(time.Second), conditionString(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)))
			}
			if l, err := leases.Get(ctx, "managed-cluster-lease", metav1.GetOptions{}); err == nil && l.Spec.RenewTime != nil {
				renewals[l.Spec.RenewTime.String()] = true
			}
			mu.Unlock()
		}
	}()
	return func() (string, error) {
		<-done
		mu.Lock()
		defer mu.Unlock()
		if len(problems) > 0 {
			return "", fmt.Errorf("not Available at %d samples, first: %s", len(problems), problems[0])
		}
		if min := int(d / (20 * time.Second)); len(renewals) < max(min, 2) {
			return "", fmt.Errorf("lease renewed %d times in %s", len(renewals), d)
		}
		return fmt.Sprintf("Available at every sample; %d lease renewals seen", len(renewals)), nil
	}
}

// clusteradmVerbs runs upstream clusteradm's read and write verbs against the Flotilla hub.
func (a *upstreamAgents) clusteradmVerbs(ctx context.Context) {
	t, r, kc := a.t, a.r, a.hubKC
	r.check(t, "clusteradm get clusters", func() (string, error) {
		out, err := a.up.clusteradm(ctx, kc, "get", "clusters")
		if err != nil {
			return "", err
		}
		if !strings.Contains(out, a.cluster) {
			return "", fmt.Errorf("%s missing from %q", a.cluster, out)
		}
		return firstLines(out, 2), nil
	})
	r.check(t, "clusteradm get clustersets", func() (string, error) {
		out, err := a.up.clusteradm(ctx, kc, "get", "clustersets")
		if err != nil {
			return "", err
		}
		if !strings.Contains(out, "default") || !strings.Contains(out, "global") {
			return "", fmt.Errorf("default and global sets missing from %q", out)
		}
		return "default, global", nil
	})
	r.check(t, "clusteradm create clusterset / clusterset set / clusterset bind", func() (string, error) {
		for _, args := range [][]string{
			{"create", "clusterset", "interop"},
			{"clusterset", "set", "interop", "--clusters", a.cluster},
			{"clusterset", "bind", "interop", "--namespace", "default"},
		} {
			if _, err := a.up.clusteradm(ctx, kc, args...); err != nil {
				return "", err
			}
		}
		return "", eventually(ctx, timeout, "cluster in set interop", func() (bool, string) {
			mc, err := a.clusters.ClusterV1().ManagedClusters().Get(ctx, a.cluster, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			_, err = a.clusters.ClusterV1beta2().ManagedClusterSetBindings("default").Get(ctx, "interop", metav1.GetOptions{})
			return mc.Labels[clusterv1beta2.ClusterSetLabel] == "interop" && err == nil, fmt.Sprintf("label %q, binding %v", mc.Labels[clusterv1beta2.ClusterSetLabel], err)
		})
	})
	r.check(t, "clusteradm create placement / get placements", func() (string, error) {
		if _, err := a.up.clusteradm(ctx, kc, "create", "placement", "interop", "--clustersets", "interop", "--namespace", "default"); err != nil {
			return "", err
		}
		if err := eventually(ctx, timeout, "decision for the cluster", func() (bool, string) {
			ds, err := a.clusters.ClusterV1beta1().PlacementDecisions("default").List(ctx, metav1.ListOptions{LabelSelector: "cluster.open-cluster-management.io/placement=interop"})
			if err != nil {
				return false, err.Error()
			}
			for _, d := range ds.Items {
				for _, c := range d.Status.Decisions {
					if c.ClusterName == a.cluster {
						return true, ""
					}
				}
			}
			return false, fmt.Sprintf("%d decision objects", len(ds.Items))
		}); err != nil {
			return "", err
		}
		out, err := a.up.clusteradm(ctx, kc, "get", "placements")
		if err != nil {
			return "", err
		}
		if !strings.Contains(out, "interop") {
			return "", fmt.Errorf("placement interop missing from %q", out)
		}
		return "decided " + a.cluster, nil
	})
}

// work: upstream's work agent applies a ManifestWork created by clusteradm.
func (a *upstreamAgents) work(ctx context.Context) {
	t, r := a.t, a.r
	spokeKC := a.env.Clusters[0].KubeconfigPath
	hubKC := filepath.Join(a.agentDir, "kubeconfig")
	a.up.start(t, "work-agent", "work", "agent", "--spoke-kubeconfig", spokeKC, "--kubeconfig", spokeKC,
		"--hub-kubeconfig", hubKC, "--workload-source-config", hubKC, "--spoke-cluster-name", a.cluster,
		"--namespace", "open-cluster-management-agent", "--disable-leader-election", "--status-sync-interval", "2s", "--listen", listenFlag(t))
	manifest := filepath.Join(t.TempDir(), "cm.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: interop\n  namespace: default\ndata:\n  from: clusteradm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	created := r.check(t, "clusteradm create work", func() (string, error) {
		_, err := a.up.clusteradm(ctx, a.hubKC, "create", "work", "interop", "-f", manifest, "--clusters", a.cluster)
		return "", err
	})
	if !created {
		r.notRun(t, "the work was not created", "upstream work agent: ManifestWork applied, status back", "clusteradm get works")
		return
	}
	r.check(t, "upstream work agent: ManifestWork applied, status back", func() (string, error) {
		if err := eventually(ctx, timeout, "Applied and Available", func() (bool, string) {
			w, err := a.works.WorkV1().ManifestWorks(a.cluster).Get(ctx, "interop", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			c := w.Status.Conditions
			return meta.IsStatusConditionTrue(c, workv1.WorkApplied) && meta.IsStatusConditionTrue(c, workv1.WorkAvailable) && len(w.Status.ResourceStatus.Manifests) == 1,
				conditionString(c, workv1.WorkApplied) + "; " + conditionString(c, workv1.WorkAvailable)
		}); err != nil {
			return "", err
		}
		cm, err := a.spokeAdmin.CoreV1().ConfigMaps("default").Get(ctx, "interop", metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("ConfigMap on the managed cluster: %w", err)
		}
		return "ConfigMap default/interop data.from=" + cm.Data["from"], nil
	})
	r.check(t, "hub apiserver watches added while upstream's agents joined and ran a work (one cluster)", func() (string, error) {
		return watchCount(ctx, a.env.Hub.Config, a.watches)
	})
	r.check(t, "clusteradm get works", func() (string, error) {
		out, err := a.up.clusteradm(ctx, a.hubKC, "get", "works", "--clusters", a.cluster)
		if err != nil {
			return "", err
		}
		if !strings.Contains(out, "interop") {
			return "", fmt.Errorf("work interop missing from %q", out)
		}
		return "", nil
	})
}

// addonsV1beta1: upstream v1beta1 addon clients against the Flotilla hub.
func (a *upstreamAgents) addonsV1beta1(ctx context.Context) {
	t, r := a.t, a.r
	r.check(t, "clusteradm addon enable / get addon", func() (string, error) {
		if _, err := a.up.clusteradm(ctx, a.hubKC, "addon", "enable", "--names", "example", "--clusters", a.cluster); err != nil {
			return "", err
		}
		out, err := a.up.clusteradm(ctx, a.hubKC, "get", "addon", "--clusters", a.cluster)
		if err != nil {
			return "", err
		}
		if !strings.Contains(out, "example") {
			return "", fmt.Errorf("addon example missing from %q", out)
		}
		return "", nil
	})
	r.check(t, "upstream registration agent gets the example addon's hub credential", func() (string, error) {
		const ns, secret = "open-cluster-management-agent-addon", "example-hub-kubeconfig"
		return ns + "/" + secret + " on the managed cluster", eventually(ctx, timeout, "Secret "+ns+"/"+secret, func() (bool, string) {
			s, err := a.spokeAdmin.CoreV1().Secrets(ns).Get(ctx, secret, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return len(s.Data["tls.crt"]) > 0 && len(s.Data["kubeconfig"]) > 0, fmt.Sprintf("keys %d", len(s.Data))
		})
	})
	r.check(t, "upstream v1beta1 addon client (the agent's hub credential) lists and watches ManagedClusterAddOns", func() (string, error) {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(a.agentDir, "kubeconfig"))
		if err != nil {
			return "", fmt.Errorf("agent hub kubeconfig: %w", err)
		}
		addons := addonclient.NewForConfigOrDie(cfg).AddonV1beta1().ManagedClusterAddOns(a.cluster)
		list, err := addons.List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", fmt.Errorf("list at v1beta1: %w", err)
		}
		w, err := addons.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			return "", fmt.Errorf("watch at v1beta1: %w", err)
		}
		w.Stop()
		var names []string
		for _, m := range list.Items {
			names = append(names, m.Name)
		}
		rb, err := kubernetes.NewForConfigOrDie(a.env.Hub.Config).RbacV1().RoleBindings(a.cluster).Get(ctx, ocm.RegistrationRoleBindingName(a.cluster), metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("the cluster's registration RoleBinding: %w", err)
		}
		now := time.Now()
		excused, bad := grantRace(logLines(a.agentLog, "v1beta1.ManagedClusterAddOn", "failed"), rb.CreationTimestamp.Time, 2*time.Second, now.Year(), now.Location())
		if len(bad) > 0 {
			return "", fmt.Errorf("the upstream agent's v1beta1 addon watch failed: %s", bad[0])
		}
		detail := "the agent's own v1beta1 informers report no failure"
		if len(excused) > 0 {
			detail = fmt.Sprintf("the agent's own v1beta1 informers report no failure but %d 403 before its RBAC was written (clusteradm approves the CSR before it accepts the cluster)", len(excused))
		}
		return fmt.Sprintf("listed %v; %s", names, detail), nil
	})
}

// denyAndReaccept: the admin denies the upstream agent, then accepts it again.
func (a *upstreamAgents) denyAndReaccept(ctx context.Context) {
	a.r.check(a.t, "upstream agent: deny, then re-accept with clusteradm", func() (string, error) {
		patch := []byte(`{"spec":{"hubAcceptsClient":false}}`)
		if _, err := a.clusters.ClusterV1().ManagedClusters().Patch(ctx, a.cluster, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return "", err
		}
		if err := eventually(ctx, timeout, "HubAcceptedManagedCluster=False", func() (bool, string) {
			mc, err := a.clusters.ClusterV1().ManagedClusters().Get(ctx, a.cluster, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return meta.IsStatusConditionFalse(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted), conditionString(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted)
		}); err != nil {
			return "", err
		}
		if _, err := a.up.clusteradm(ctx, a.hubKC, "accept", "--clusters", a.cluster); err != nil {
			return "", err
		}
		leases := kubernetes.NewForConfigOrDie(a.env.Hub.Config).CoordinationV1().Leases(a.cluster)
		before, err := leases.Get(ctx, "managed-cluster-lease", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if err := a.waitAvailable(ctx); err != nil {
			return "", err
		}
		return "", eventually(ctx, timeout, "lease renewed after re-accept", func() (bool, string) {
			l, err := leases.Get(ctx, "managed-cluster-lease", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return l.Spec.RenewTime != nil && before.Spec.RenewTime != nil && l.Spec.RenewTime.After(before.Spec.RenewTime.Time), l.Spec.RenewTime.String()
		})
	})
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}
