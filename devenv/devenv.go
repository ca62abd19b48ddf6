package devenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"flotilla.dev/flotilla/devenv/host"
	"flotilla.dev/flotilla/devenv/node"
	"flotilla.dev/flotilla/internal/controlplane"
	"flotilla.dev/flotilla/internal/image"
	"flotilla.dev/flotilla/manifests"
)

// Options locate and shape the environment. Zero values take the documented defaults.
type Options struct {
	// DataDir holds everything the environment keeps. Default ".flotilla".
	DataDir string
	// Clusters is the number of managed clusters (cluster1..clusterN). Default:
	// what the environment already has, else 2. An environment can grow, not shrink.
	Clusters int
	// ControlPlaneDir holds etcd, kube-apiserver and kube-controller-manager.
	// Default: see controlplane.FindBinaries.
	ControlPlaneDir string
	// FlotillaBinary runs the hub and klusterlet processes. Default: this executable.
	FlotillaBinary string
	// Out receives progress lines. Default io.Discard.
	Out io.Writer
	// Nodes gives each managed cluster a real node (containerd and kubelet on
	// this machine; needs root and Debian packages, see node.Check) and runs
	// each klusterlet as a Pod installed by `flotilla join`. An environment is
	// made with or without nodes and stays so. Default false: no nodes, the
	// klusterlets run as processes.
	Nodes bool
	// Image is the flotilla image the nodes run (built from FlotillaBinary and
	// imported into each node). Default image.Ref("", "latest").
	Image string
	// KlusterletArgs are appended to every `flotilla klusterlet` command line
	// (e.g. --client-cert-expiration-seconds for the chaos run). Default none.
	KlusterletArgs []string
	// HubArgs are appended to the `flotilla hub` command line of the process
	// mode (e.g. -v 4 to log its watches). Default none.
	HubArgs []string
	// HubDBSecret, in the nodes mode, names a Secret of the hub namespace
	// whose key "url" holds a PostgreSQL URL: the hub Pods keep their
	// compliance history and search index there, shared by both replicas
	// (deploy.Options.ComplianceDBSecret; the Secret must exist). Default "":
	// an emptyDir per hub Pod.
	HubDBSecret string
}

const (
	// DefaultDataDir is where the environment lives unless told otherwise.
	DefaultDataDir = ".flotilla"
	// DefaultClusters is the number of managed clusters of a new environment.
	DefaultClusters = 2
	hubName         = "hub"
)

// record is env.json.
type record struct {
	Clusters []string `json:"clusters"`
	Nodes    bool     `json:"nodes,omitempty"`
}

func (o *Options) defaults() error {
	if o.DataDir == "" {
		o.DataDir = DefaultDataDir
	}
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return err
	}
	o.DataDir = abs
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Image == "" {
		o.Image = image.Ref("", "latest")
	}
	if o.FlotillaBinary == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		o.FlotillaBinary = exe
	}
	return nil
}

func (o *Options) progress(format string, args ...any) {
	fmt.Fprintf(o.Out, "==> "+format+"\n", args...)
}

func (o *Options) cpDir(name string) string { return filepath.Join(o.DataDir, "controlplanes", name) }

// HubKubeconfig is the path of the hub's admin kubeconfig.
func (o *Options) HubKubeconfig() string { return filepath.Join(o.DataDir, "hub.kubeconfig") }

// ClusterKubeconfig is the path of a managed cluster's admin kubeconfig.
func (o *Options) ClusterKubeconfig(name string) string {
	return filepath.Join(o.DataDir, "clusters", name+".kubeconfig")
}

func readRecord(dataDir string) (*record, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, "env.json"))
	if err != nil {
		return nil, err
	}
	r := &record{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%s is damaged (%v): remove the folder to start afresh", filepath.Join(dataDir, "env.json"), err)
	}
	return r, nil
}

func writeRecord(dataDir string, r *record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dataDir, "env.json"), data, 0o644)
}

// Result describes the environment after Up.
type Result struct {
	// AlreadyRunning is true when Up found everything running and did nothing.
	AlreadyRunning bool
	Status         *Status
}

// Up starts whatever of the environment is not running and returns once all of
// it is ready. On a running environment it does nothing and says so.
func Up(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	rec, err := readRecord(opts.DataDir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		n := opts.Clusters
		if n == 0 {
			n = DefaultClusters
		}
		rec = &record{Nodes: opts.Nodes}
		for i := 1; i <= n; i++ {
			rec.Clusters = append(rec.Clusters, fmt.Sprintf("cluster%d", i))
		}
	case err != nil:
		return nil, err
	case opts.Nodes && !rec.Nodes:
		return nil, fmt.Errorf("the environment in %s was made without nodes and cannot gain them: "+
			"run `flotilla dev down --data-dir %s`, remove that folder (or use another --data-dir), and start again with --nodes", opts.DataDir, opts.DataDir)
	case opts.Clusters != 0 && opts.Clusters < len(rec.Clusters):
		return nil, fmt.Errorf("the environment in %s has %d clusters and cannot shrink to %d: "+
			"run `flotilla dev down --data-dir %s`, remove that folder, and start again", opts.DataDir, len(rec.Clusters), opts.Clusters, opts.DataDir)
	default:
		for i := len(rec.Clusters) + 1; i <= opts.Clusters; i++ {
			rec.Clusters = append(rec.Clusters, fmt.Sprintf("cluster%d", i))
		}
	}

	before, err := status(&opts, rec)
	if err != nil {
		return nil, err
	}
	if before.AllRunning() {
		return &Result{AlreadyRunning: true, Status: before}, nil
	}

	bins, err := controlplane.FindBinaries(opts.ControlPlaneDir)
	if err != nil {
		return nil, err
	}
	if rec.Nodes {
		// Before anything is written: a machine that cannot run nodes leaves no trace.
		if err := node.Check(bins.Kubelet, bins.Scheduler); err != nil {
			return nil, err
		}
	}
	// Owner only: admin kubeconfigs, keys and logs (which hold request bodies
	// at -v 8) live here.
	for _, d := range []string{"clusters", "controlplanes", "logs"} {
		dir := filepath.Join(opts.DataDir, d)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		if err := os.Chmod(dir, 0o700); err != nil { // an environment made before this rule
			return nil, err
		}
	}
	if err := writeRecord(opts.DataDir, rec); err != nil {
		return nil, err
	}

	opts.Nodes = rec.Nodes
	var (
		journal *host.Journal
		plan    node.Plan
		address string
	)
	if rec.Nodes {
		if journal, plan, err = prepareHost(&opts, bins, rec); err != nil {
			return nil, err
		}
		address = plan.HostIP()
	}
	names := append([]string{hubName}, rec.Clusters...)
	opts.progress("starting %d control planes (hub, %d managed clusters) in %s", len(names), len(rec.Clusters), opts.DataDir)
	started, err := startControlPlanes(ctx, &opts, bins, names, address)
	if err != nil {
		return nil, err
	}
	for _, cp := range started {
		if err := copyFile(cp.KubeconfigPath, kubeconfigPath(&opts, cp.Name)); err != nil {
			return nil, err
		}
	}
	opts.progress("installing CRDs and their admission policies (OCM hub and governance CRDs on the hub; ClusterClaim, AppliedManifestWork and policy CRDs on managed clusters)")
	for _, cp := range started {
		if err := manifests.InstallCRDs(ctx, cp.Config, crdSets(cp.Name)...); err != nil {
			return nil, fmt.Errorf("%s: %w", cp.Name, err)
		}
	}
	if rec.Nodes {
		if err := buildImages(&opts); err != nil {
			return nil, err
		}
		cps := map[string]*controlplane.ControlPlane{}
		for _, cp := range started {
			cps[cp.Name] = cp
		}
		opts.progress("starting one node for the hub and one per managed cluster")
		if err := startNodes(ctx, &opts, journal, plan, rec, cps, bins.Kubelet); err != nil {
			return nil, err
		}
	}
	if err := startFlotilla(ctx, &opts, rec); err != nil {
		return nil, err
	}
	after, err := status(&opts, rec)
	if err != nil {
		return nil, err
	}
	return &Result{Status: after}, nil
}

// startControlPlanes starts, in parallel, each named control plane that is not
// fully running (stopping the remains of a half-running one first).
func startControlPlanes(ctx context.Context, opts *Options, bins controlplane.Binaries, names []string, address string) ([]*controlplane.ControlPlane, error) {
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		started []*controlplane.ControlPlane
		errs    []error
	)
	for _, name := range names {
		dir := opts.cpDir(name)
		if existing, err := controlplane.Attach(dir); err == nil {
			running := existing.Running()
			if len(running) == existing.Expected() {
				opts.progress("%s: already running", name)
				mu.Lock()
				started = append(started, existing)
				mu.Unlock()
				continue
			}
			if len(running) > 0 {
				opts.progress("%s: only %v running; restarting it", name, running)
				if err := existing.Stop(); err != nil {
					return nil, err
				}
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cp, err := controlplane.Start(ctx, controlplane.Config{
				Name: name, Dir: dir, Binaries: bins, Detached: true, Address: address, Nodes: opts.Nodes,
				Progress: func(format string, args ...any) {
					mu.Lock()
					defer mu.Unlock()
					opts.progress(format, args...)
				},
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			started = append(started, cp)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return started, nil
}

// crdSets are the CRD sets a control plane serves.
func crdSets(name string) []string {
	if name == hubName {
		return []string{manifests.HubCRDs, manifests.PolicyCRDs, manifests.FlotillaCRDs}
	}
	sets := []string{manifests.KlusterletCRDs}
	if _, err := manifests.CRDs(manifests.PolicyCRDs); err == nil {
		sets = append(sets, manifests.PolicyCRDs)
	}
	return sets
}

func kubeconfigPath(opts *Options, name string) string {
	if name == hubName {
		return opts.HubKubeconfig()
	}
	return opts.ClusterKubeconfig(name)
}

// Down stops every process of the environment (Flotilla's own first, then the
// nodes, then the control planes), undoes every host change of an environment
// with nodes, and keeps its data. It reports what it stopped.
func Down(opts Options) ([]string, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	rec, err := readRecord(opts.DataDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no Flotilla environment in %s (nothing to stop)", opts.DataDir)
	}
	if err != nil {
		return nil, err
	}
	stopped, err := stopProcesses(&opts)
	if err != nil {
		return stopped, err
	}
	if rec.Nodes {
		s, err := stopNodes(context.Background(), &opts, rec)
		stopped = append(stopped, s...)
		if err != nil {
			return stopped, err
		}
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for _, name := range append([]string{hubName}, rec.Clusters...) {
		cp, err := controlplane.Attach(opts.cpDir(name))
		if err != nil {
			continue // never started
		}
		if len(cp.Running()) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cp.Stop()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				return
			}
			stopped = append(stopped, name+" control plane")
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return stopped, err
	}
	if err := undoHost(&opts); err != nil {
		return stopped, fmt.Errorf("undo host changes (still listed in %s): %w", opts.journalPath(), err)
	}
	return stopped, nil
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}
