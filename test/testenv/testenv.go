// Package testenv starts real control planes for Flotilla's integration tests: a
// hub and N managed clusters, each its own etcd + kube-apiserver (RBAC on) +
// kube-controller-manager, with the OCM CRDs installed.
//
//	env := testenv.Start(t, testenv.Options{Clusters: 2})
//	hub := kubernetes.NewForConfigOrDie(env.Hub.Config)
//
// Every process is killed when the test ends (or when the test binary dies), and
// several environments can run at once: each picks its own free ports and keeps
// its files in a temporary folder. Packages that share one environment across
// tests start it in TestMain with New and stop it with Env.Stop.
//
// The control-plane binaries come from `make controlplane` (found through
// $FLOTILLA_CONTROLPLANE_DIR or bin/controlplane in the module).
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"flotilla.dev/flotilla/internal/controlplane"
	"flotilla.dev/flotilla/manifests"
)

// ControlPlane is one running hub or managed cluster; see controlplane.ControlPlane
// for its fields (Name, URL, CAPEM, KubeconfigPath, admin Config).
type ControlPlane = controlplane.ControlPlane

// Options says what to start. Zero values take the documented defaults.
type Options struct {
	// Clusters is the number of managed clusters, named cluster1..clusterN. Default 0.
	Clusters int
	// NoHub skips the hub (for tests of managed-cluster components alone). Default false.
	NoHub bool
	// HubCRDs are the CRD sets installed on the hub. Default: manifests.HubCRDs,
	// manifests.PolicyCRDs (the governance root policies live on the hub) and
	// manifests.FlotillaCRDs.
	HubCRDs []string
	// ClusterCRDs are the CRD sets installed on each managed cluster. Default:
	// manifests.KlusterletCRDs, plus manifests.PolicyCRDs when that set exists.
	ClusterCRDs []string
}

// Env is a running set of control planes.
type Env struct {
	// Hub is nil when Options.NoHub is set.
	Hub      *ControlPlane
	Clusters []*ControlPlane

	root string
	all  []*ControlPlane
}

// Start starts the environment and stops it when t ends. It fails t with the
// reason (for example how to build missing binaries) when it cannot start.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	env, err := New(opts)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("testenv: stop: %v", err)
		}
	})
	return env
}

// New starts the environment; the caller must call Stop. Control planes start
// in parallel.
func New(opts Options) (*Env, error) {
	if opts.HubCRDs == nil {
		opts.HubCRDs = []string{manifests.HubCRDs, manifests.PolicyCRDs, manifests.FlotillaCRDs}
	}
	if opts.ClusterCRDs == nil {
		opts.ClusterCRDs = []string{manifests.KlusterletCRDs}
		if _, err := manifests.CRDs(manifests.PolicyCRDs); err == nil {
			opts.ClusterCRDs = append(opts.ClusterCRDs, manifests.PolicyCRDs)
		}
	}
	bins, err := controlplane.FindBinaries("")
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "flotilla-testenv-")
	if err != nil {
		return nil, err
	}
	env := &Env{root: root}

	type want struct {
		name string
		crds []string
	}
	var wants []want
	if !opts.NoHub {
		wants = append(wants, want{"hub", opts.HubCRDs})
	}
	for i := 1; i <= opts.Clusters; i++ {
		wants = append(wants, want{fmt.Sprintf("cluster%d", i), opts.ClusterCRDs})
	}

	started := make([]*ControlPlane, len(wants))
	errs := make([]error, len(wants))
	var wg sync.WaitGroup
	for i, w := range wants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started[i], errs[i] = startOne(bins, root, w.name, w.crds)
		}()
	}
	wg.Wait()
	for _, cp := range started {
		if cp != nil {
			env.all = append(env.all, cp)
		}
	}
	if err := errors.Join(errs...); err != nil {
		_ = env.Stop()
		return nil, err
	}
	i := 0
	if !opts.NoHub {
		env.Hub = started[0]
		i = 1
	}
	env.Clusters = started[i:]
	return env, nil
}

// startOne starts a control plane and installs its CRDs, retrying when a port
// picked as free was taken by another environment in the meantime.
func startOne(bins controlplane.Binaries, root, name string, crds []string) (*ControlPlane, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		dir, err := os.MkdirTemp(root, name+"-")
		if err != nil {
			return nil, err
		}
		cp, err := controlplane.Start(ctx, controlplane.Config{Name: name, Dir: dir, Binaries: bins, FastEtcd: true})
		if err != nil {
			lastErr = err
			if strings.Contains(err.Error(), "address already in use") || strings.Contains(err.Error(), "another process is using") {
				continue
			}
			return nil, err
		}
		if len(crds) > 0 {
			if err := manifests.InstallCRDs(ctx, cp.Config, crds...); err != nil {
				_ = cp.Stop()
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
		return cp, nil
	}
	return nil, lastErr
}

// Cluster returns the managed cluster with the given name, or nil.
func (e *Env) Cluster(name string) *ControlPlane {
	for _, c := range e.Clusters {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// PIDs lists the process IDs of every running component, for tests that check
// nothing is left behind.
func (e *Env) PIDs() []int {
	var out []int
	for _, cp := range e.all {
		for _, pid := range cp.PIDs() {
			out = append(out, pid)
		}
	}
	return out
}

// Stop stops every control plane and removes their files.
func (e *Env) Stop() error {
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, cp := range e.all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cp.Stop(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", cp.Name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if e.root != "" {
		if err := os.RemoveAll(e.root); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WithoutAdmissionPolicies removes the bindings of Flotilla's admission
// policies (names `flotilla-*`) from cp until the test ends, for tests about
// objects that got in anyway (stored before the policies, or on a hub whose
// policies were removed); the caller polls until its bad write is admitted.
// The bindings come back when the test ends.
func WithoutAdmissionPolicies(t testing.TB, cp *ControlPlane) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range list.Items {
		if strings.HasPrefix(b.Name, "flotilla-") {
			if err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() {
		if err := manifests.InstallAdmission(context.Background(), cp.Config, "hub"); err != nil {
			t.Errorf("re-install the admission policies: %v", err)
		}
	})
}
