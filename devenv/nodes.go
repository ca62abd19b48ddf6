package devenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"flotilla.dev/flotilla/devenv/host"
	"flotilla.dev/flotilla/devenv/node"
	"flotilla.dev/flotilla/internal/controlplane"
	"flotilla.dev/flotilla/internal/image"
)

// nodeReadyTimeout bounds the wait for a node to become Ready.
const nodeReadyTimeout = 3 * time.Minute

// PauseRef names the sandbox image of the nodes: the flotilla binary running
// `flotilla dev pause`, built locally and never pulled.
const PauseRef = "flotilla.local/pause:1"

func (o *Options) journalPath() string { return filepath.Join(o.DataDir, "host.json") }
func (o *Options) nodeDir(name string) string {
	return filepath.Join(o.DataDir, "nodes", name)
}
func (o *Options) imageArchive() string { return filepath.Join(o.DataDir, "images", "flotilla.tar") }

// nodeIndex is a cluster's place in the address plan: 0 the hub, i clusterN.
func nodeIndex(rec *record, name string) int {
	for i, c := range rec.Clusters {
		if c == name {
			return i + 1
		}
	}
	return 0
}

// nodeName is the Node object of a cluster's one node.
func nodeName(cluster string) string { return cluster + "-node" }

// prepareHost checks the machine and makes the environment's bridge and the
// apiservers' address on it (recorded in host.json).
func prepareHost(opts *Options, bins controlplane.Binaries, rec *record) (*host.Journal, node.Plan, error) {
	plan := node.NewPlan(opts.DataDir)
	if err := node.Check(bins.Kubelet, bins.Scheduler); err != nil {
		return nil, plan, err
	}
	if len(rec.Clusters) > node.MaxNodes {
		return nil, plan, fmt.Errorf("at most %d clusters have nodes", node.MaxNodes)
	}
	routes, err := hostRoutes()
	if err != nil {
		return nil, plan, err
	}
	own := func(dev string) bool { return strings.HasPrefix(dev, "fl"+plan.ID+"-") }
	if clash := plan.Overlaps(routes, own); len(clash) > 0 {
		return nil, plan, fmt.Errorf("this environment's address range %s overlaps routes of this machine (%v): use another --data-dir (the range derives from it)", plan.Subnet(), clash)
	}
	j, err := host.Open(opts.journalPath())
	if err != nil {
		return nil, plan, err
	}
	opts.progress("host: bridge %s with %s for the apiservers (changes recorded in %s)", plan.Bridge(), plan.HostIP(), j.Path())
	if err := j.EnsureBridge(plan.Bridge()); err != nil {
		return nil, plan, err
	}
	if err := j.EnsureAddr(plan.Bridge(), plan.HostIP()+"/16"); err != nil {
		return nil, plan, err
	}
	return j, plan, nil
}

func hostRoutes() ([]node.Route, error) {
	out, err := exec.Command("ip", "-o", "-4", "route", "show").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ip route: %w: %s", err, out)
	}
	var routes []node.Route
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == "default" {
			continue
		}
		r := node.Route{Dst: f[0]}
		if !strings.Contains(r.Dst, "/") {
			r.Dst += "/32"
		}
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "dev" {
				r.Dev = f[i+1]
			}
		}
		routes = append(routes, r)
	}
	return routes, nil
}

// buildImages writes the archive of the flotilla image and the pause image,
// both from the flotilla binary itself.
func buildImages(opts *Options) error {
	opts.progress("building image %s from %s", opts.Image, opts.FlotillaBinary)
	img, err := image.Build(image.Options{Binary: opts.FlotillaBinary})
	if err != nil {
		return err
	}
	pause, err := image.Build(image.Options{Binary: opts.FlotillaBinary, Args: []string{"dev", "pause"}})
	if err != nil {
		return err
	}
	return image.WriteArchiveFile(opts.imageArchive(), image.Named{Ref: opts.Image, Image: img}, image.Named{Ref: PauseRef, Image: pause})
}

// startNodes gives the hub and each managed cluster one node and waits until
// all are Ready.
func startNodes(ctx context.Context, opts *Options, j *host.Journal, plan node.Plan, rec *record, cps map[string]*controlplane.ControlPlane, kubelet string) error {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for _, name := range append([]string{hubName}, rec.Clusters...) {
		cp := cps[name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := startNode(ctx, opts, j, plan, rec, cp, kubelet, &mu)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func startNode(ctx context.Context, opts *Options, j *host.Journal, plan node.Plan, rec *record, cp *controlplane.ControlPlane, kubelet string, mu *sync.Mutex) error {
	admin, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	token, err := node.PrepareCluster(ctx, admin, time.Hour)
	if err != nil {
		return fmt.Errorf("%s: %w", cp.Name, err)
	}
	cfg := node.Config{
		Index: nodeIndex(rec, cp.Name), Name: nodeName(cp.Name), Dir: opts.nodeDir(cp.Name), Plan: plan,
		APIServer: cp.URL, CAPEM: cp.CAPEM, Token: token, Kubelet: kubelet,
		SandboxImage: PauseRef, Archives: []string{opts.imageArchive()}, Journal: j,
		Progress: func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			opts.progress(format, args...)
		},
	}
	start := time.Now()
	if err := node.Start(ctx, cfg); err != nil {
		return err
	}
	if err := node.WaitReady(ctx, cfg, admin, nodeReadyTimeout); err != nil {
		return err
	}
	cfg.Progress("%s: node %s Ready in %s", cp.Name, cfg.Name, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// stopNodes stops every node's kubelet and containerd (and their Pods).
func stopNodes(ctx context.Context, opts *Options, rec *record) ([]string, error) {
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		stopped []string
		errs    []error
	)
	for _, name := range append([]string{hubName}, rec.Clusters...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := node.Stop(ctx, opts.nodeDir(name))
			mu.Lock()
			defer mu.Unlock()
			for _, p := range s {
				stopped = append(stopped, nodeName(name)+" "+p)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", nodeName(name), err))
			}
		}()
	}
	wg.Wait()
	return stopped, errors.Join(errs...)
}

// undoHost reverts every recorded host change (after nodes and control planes stopped).
func undoHost(opts *Options) error {
	if _, err := os.Stat(opts.journalPath()); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	j, err := host.Open(opts.journalPath())
	if err != nil {
		return err
	}
	return j.Undo()
}
