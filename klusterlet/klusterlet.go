package klusterlet

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"

	"flotilla.dev/flotilla/klusterlet/registration"
	"flotilla.dev/flotilla/klusterlet/work"
)

// Options configures the klusterlet. Every field documents its default.
type Options struct {
	// Registration configures joining the hub; its ClusterName and SpokeConfig are required.
	Registration registration.Options
	// WorkStatusSyncInterval is passed to the work agent. Default: the work agent's (10s).
	WorkStatusSyncInterval time.Duration
	// AppliedWorkEvictionGracePeriod is passed to the work agent. Default: the work agent's (60m).
	AppliedWorkEvictionGracePeriod time.Duration
	// DisableWork runs registration only (benchmarks, tests of registration alone). Default false.
	DisableWork bool
}

// certReloadInterval is how often clients built from the hub kubeconfig files
// re-read a rotated or re-issued certificate (client-go's default is 5 minutes,
// longer than a short certificate's last fifth of life, and long after a
// re-bootstrap replaced a rejected one).
const certReloadInterval = 10 * time.Second

var setReload sync.Once

// workRestartDelay is how long the klusterlet waits before restarting a work
// agent that failed on its own.
const workRestartDelay = 5 * time.Second

// Run runs the registration agent and, once joined, the work agent until ctx
// ends or registration fails. The work agent runs only while the hub accepts
// the cluster (see superviseWork): a deny stops it at once, closing its hub
// watches, and a re-accept starts it again.
func Run(ctx context.Context, opts Options) error {
	setReload.Do(func() {
		if transport.CertCallbackRefreshDuration > certReloadInterval {
			transport.CertCallbackRefreshDuration = certReloadInterval
		}
	})
	agent, err := registration.New(opts.Registration)
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return agent.Run(ctx) })
	if !opts.DisableWork {
		g.Go(func() error {
			hubConfig, agentName, err := agent.WaitJoined(ctx)
			if err != nil {
				return nil // stopped before joining
			}
			log := klog.FromContext(ctx).WithValues("cluster", opts.Registration.ClusterName)
			states := make(chan delivery, 1)
			go func() {
				if err := watchOwnCluster(ctx, hubConfig, opts.Registration.ClusterName, states, log); err != nil {
					log.Error(err, "watch the cluster's own ManagedCluster")
				}
			}()
			superviseWork(ctx, states, func(ctx context.Context, cleanupOnly func() bool) error {
				if err := work.Run(ctx, work.Options{
					HubConfig:                      hubConfig,
					SpokeConfig:                    opts.Registration.SpokeConfig,
					ClusterName:                    opts.Registration.ClusterName,
					AgentID:                        agentName,
					StatusSyncInterval:             opts.WorkStatusSyncInterval,
					AppliedWorkEvictionGracePeriod: opts.AppliedWorkEvictionGracePeriod,
					CleanupOnly:                    cleanupOnly,
				}); err != nil {
					return fmt.Errorf("work agent: %w", err)
				}
				return nil
			}, workRestartDelay, log)
			return nil
		})
	}
	return g.Wait()
}
