package install_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"flotilla.dev/flotilla/addons"
	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/test/testenv"
)

// These tests run the hub's addon manager on a real hub apiserver with
// simulated clusters: ManagedClusters and their namespaces, Placements whose
// decisions the test writes (scheduling disabled on them), and a stand-in work
// agent the test can hold per cluster, so what is rolled out where is decided
// by the test, never by timing.

var (
	hubCli client.Client
	agent  = &workAgent{held: map[string]bool{}}
)

const (
	timeout = time.Minute
	tick    = 100 * time.Millisecond
)

var clusters = []string{"c1", "c2", "c3", "c4"}

// tuned is an addon whose one ConfigMap carries the customized variable
// "level" of the AddOnDeploymentConfig that applies (health None: applied
// works mean Available).
type tuned struct{ name string }

func (a tuned) Name() string { return a.name }
func (a tuned) Options() framework.Options {
	return framework.Options{Health: framework.Health{Mode: framework.HealthNone}}
}
func (a tuned) Manifests(c *clusterv1.ManagedCluster, m *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
	return a.ManifestsWithConfig(c, m, nil)
}
func (a tuned) ManifestsWithConfig(_ *clusterv1.ManagedCluster, m *addonv1alpha1.ManagedClusterAddOn, cfg *addonv1alpha1.AddOnDeploymentConfigSpec) ([]runtime.Object, error) {
	level := "none"
	if cfg != nil {
		for _, v := range cfg.CustomizedVariables {
			if v.Name == "level" {
				level = v.Value
			}
		}
	}
	return []runtime.Object{&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: m.Status.Namespace}, Data: map[string]string{"level": level}}}, nil
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctrl.SetLogger(klog.Background())
	env, err := testenv.New(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer env.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if hubCli, err = client.New(env.Hub.Config, client.Options{Scheme: scheme.New()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	reg, err := framework.NewRegistry(tuned{"tuned"}, tuned{"waved"}, tuned{"fragile"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mgr, err := ctrl.NewManager(env.Hub.Config, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := addons.Setup(mgr, addons.Options{Registry: reg}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = mgr.Start(ctx) }()
	for _, name := range append([]string{"cfg"}, clusters...) {
		if err := hubCli.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	for _, name := range clusters {
		if err := hubCli.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	go agent.run(ctx)
	return m.Run()
}

// workAgent stands in for the clusters' work agents: it marks every addon work
// Applied and Available for its current generation, except on held clusters.
type workAgent struct {
	mu   sync.Mutex
	held map[string]bool
}

func (a *workAgent) hold(on bool, clusters ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range clusters {
		a.held[c] = on
	}
}

func (a *workAgent) run(ctx context.Context) {
	for ctx.Err() == nil {
		var works workv1.ManifestWorkList
		if err := hubCli.List(ctx, &works); err == nil {
			for i := range works.Items {
				w := &works.Items[i]
				a.mu.Lock()
				held := a.held[w.Namespace]
				a.mu.Unlock()
				c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
				if held || (c != nil && c.ObservedGeneration == w.Generation) {
					continue
				}
				for _, t := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
					meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "StandIn", ObservedGeneration: w.Generation})
				}
				_ = hubCli.Status().Update(ctx, w)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(tick):
		}
	}
}

// level is the "level" the addon's deploy work on cluster delivers ("" when none).
func level(t *testing.T, cluster, addon string) string {
	t.Helper()
	var w workv1.ManifestWork
	if err := hubCli.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: "addon-" + addon + "-deploy-0"}, &w); err != nil {
		return ""
	}
	var cm corev1.ConfigMap
	if len(w.Spec.Workload.Manifests) == 0 || json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &cm) != nil {
		return ""
	}
	return cm.Data["level"]
}
