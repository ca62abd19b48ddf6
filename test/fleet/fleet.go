// Package fleet starts, for a test package's TestMain, a hub and its managed
// clusters on real control planes, through the same steps `flotilla dev up`
// takes: `init` (bootstrap.Init), the whole hub (hub.Run, webhooks included),
// and for each cluster `join` (join.Join), its klusterlet (in-process here, a
// process or a Pod there) and `accept` (accept.Accept, waiting until Joined).
//
// A suite's TestMain is then a few lines:
//
//	var f *fleet.Fleet
//
//	func TestMain(m *testing.M) {
//		os.Exit(fleet.Main(m, fleet.Options{Clusters: 2, Join: true}, &f))
//	}
//
// What a suite needs besides (addon agents, an engine, a fake Gatekeeper)
// goes in Options.Cluster (per cluster, before accept) and Options.Setup (once
// the fleet is up).
package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/hub/registration/accept"
	"flotilla.dev/flotilla/hub/registration/bootstrap"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/klusterlet"
	"flotilla.dev/flotilla/klusterlet/join"
	"flotilla.dev/flotilla/klusterlet/registration"
	"flotilla.dev/flotilla/test/testenv"
)

// DefaultTimeout bounds the hub's start and the clusters' acceptance.
const DefaultTimeout = 2 * time.Minute

// Options says what the fleet is. Every field documents its default.
type Options struct {
	// Clusters is the number of managed clusters, cluster1..clusterN. Default 0.
	Clusters int
	// Hub configures the hub; its Config is the fleet's hub. Default: hub.Options{}.
	Hub hub.Options
	// Join joins every cluster, runs its klusterlet in-process and accepts it.
	// Default false: the suite joins clusters itself (registration suites).
	Join bool
	// Klusterlet adjusts cluster i's klusterlet before it starts. Default:
	// the fast settings below (lease 5 s, status every second).
	Klusterlet func(i int, o *klusterlet.Options)
	// Cluster runs for each joined cluster after its klusterlet starts and
	// before accept (for example the addon agents that run next to it).
	// Default none.
	Cluster func(ctx context.Context, f *Fleet, i int) error
	// Setup runs once the fleet is up, before the tests. Default none.
	Setup func(ctx context.Context, f *Fleet) error
	// Timeout bounds the hub's start and the acceptance. Default DefaultTimeout.
	Timeout time.Duration
}

// Fleet is what the tests use.
type Fleet struct {
	Env *testenv.Env
	// Hub is Env.Hub; Clusters are Env.Clusters.
	Hub      *testenv.ControlPlane
	Clusters []*testenv.ControlPlane
	// Token is the bootstrap token `init` minted.
	Token string
	// Client reads and writes the hub as its admin (internal/scheme).
	Client client.Client
	// Names are the clusters' names, in order.
	Names []string
}

// Main starts the fleet, runs m and stops everything; it returns m's exit
// code, or 1 (saying why on stderr) when the fleet cannot start. *out (when
// out is not nil) is set before the tests run.
func Main(m *testing.M, opts Options, out **Fleet) int {
	ctrl.SetLogger(klog.Background())
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	env, err := testenv.New(testenv.Options{Clusters: opts.Clusters})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer env.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, hubDone, err := start(ctx, env, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		cancel()
		if hubDone != nil {
			<-hubDone
		}
		return 1
	}
	if out != nil {
		*out = f
	}
	code := m.Run()
	cancel()
	<-hubDone
	return code
}

// start runs the steps; hubDone receives hub.Run's result once ctx ends (nil
// when the hub never started).
func start(ctx context.Context, env *testenv.Env, opts Options) (*Fleet, <-chan error, error) {
	f := &Fleet{Env: env, Hub: env.Hub, Clusters: env.Clusters}
	for _, c := range env.Clusters {
		f.Names = append(f.Names, c.Name)
	}
	var err error
	if f.Client, err = client.New(env.Hub.Config, client.Options{Scheme: scheme.New()}); err != nil {
		return nil, nil, err
	}
	res, err := bootstrap.Init(ctx, bootstrap.Options{Config: env.Hub.Config})
	if err != nil {
		return nil, nil, fmt.Errorf("init: %w", err)
	}
	f.Token = res.Token
	hopts := opts.Hub
	hopts.Config = env.Hub.Config
	hubDone, err := StartHub(ctx, hopts, opts.Timeout)
	if err != nil {
		return nil, hubDone, err
	}
	if opts.Join {
		for i, spoke := range env.Clusters {
			if err := f.join(ctx, i, spoke, opts); err != nil {
				return nil, hubDone, err
			}
		}
		if err := accept.Accept(ctx, accept.Options{Config: env.Hub.Config, Clusters: f.Names, Wait: true, Timeout: opts.Timeout}); err != nil {
			return nil, hubDone, fmt.Errorf("accept: %w", err)
		}
	}
	if opts.Setup != nil {
		if err := opts.Setup(ctx, f); err != nil {
			return nil, hubDone, fmt.Errorf("setup: %w", err)
		}
	}
	return f, hubDone, nil
}

// join joins cluster i and runs its klusterlet until ctx ends.
func (f *Fleet) join(ctx context.Context, i int, spoke *testenv.ControlPlane, opts Options) error {
	name := spoke.Name
	if err := join.Join(ctx, join.Options{SpokeConfig: spoke.Config, HubAPIServer: f.Hub.URL, HubToken: f.Token,
		ClusterName: name, NoDeployment: true}); err != nil {
		return fmt.Errorf("join %s: %w", name, err)
	}
	dir, err := os.MkdirTemp("", "flotilla-fleet-"+name+"-")
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		_ = os.RemoveAll(dir)
	}()
	ko := klusterlet.Options{
		Registration: registration.Options{ClusterName: name, SpokeConfig: spoke.Config, HubKubeconfigDir: dir,
			LeaseDurationSeconds: 5, StatusSyncInterval: time.Second, RetryInterval: time.Second, AddonSyncInterval: 500 * time.Millisecond},
		WorkStatusSyncInterval: time.Second,
	}
	if opts.Klusterlet != nil {
		opts.Klusterlet(i, &ko)
	}
	go func() { _ = klusterlet.Run(ctx, ko) }()
	if opts.Cluster != nil {
		if err := opts.Cluster(ctx, f, i); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// StartHub runs hub.Run(ctx, opts) in the background and returns once the
// hub serves (opts.Ready is StartHub's own), or with the error that stopped
// it, or when it is not ready within timeout. done receives hub.Run's result
// when the hub stops (cancel ctx, then wait on done).
func StartHub(ctx context.Context, opts hub.Options, timeout time.Duration) (done <-chan error, err error) {
	ready := make(chan struct{})
	stopped := make(chan error, 1)
	opts.Ready = func() { close(ready) }
	go func() { stopped <- hub.Run(ctx, opts) }()
	select {
	case <-ready:
		return stopped, nil
	case err := <-stopped:
		if err == nil {
			err = errors.New("stopped before it was ready")
		}
		return nil, fmt.Errorf("hub: %w", err)
	case <-time.After(timeout):
		return stopped, fmt.Errorf("hub did not become ready within %s", timeout)
	}
}
