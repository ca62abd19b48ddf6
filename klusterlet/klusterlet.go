package klusterlet

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/internal/watchguard"
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

// workRestartDelay is how long the klusterlet waits before restarting a work
// agent that failed on its own.
const workRestartDelay = 5 * time.Second

// Run runs the registration agent and, once joined, the work agent until ctx
// ends or registration fails. The work agent runs only while the hub accepts
// the cluster (see superviseWork): a deny stops it at once, closing its hub
// watches, and a re-accept starts it again.
func Run(ctx context.Context, opts Options) error {
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
			cluster := opts.Registration.ClusterName
			// The gate follows the registration agent's own watch of the
			// cluster's ManagedCluster (no watch of its own); only the latest
			// delivery waits in the channel.
			agent.FollowOwnCluster(func(mc *clusterv1.ManagedCluster) {
				select {
				case <-states: // drop the stale value
				default:
				}
				states <- deliveryFor(mc)
			})
			superviseWork(ctx, states, func(ctx context.Context, cleanupOnly func() bool) error {
				// What the work agent's caches hang on: the cluster's
				// ManifestWorks on the hub, the AppliedManifestWorks and applied
				// kinds on the cluster; each connection's guard reads the
				// informers' own streams.
				hubGuard, hub := watchguard.NewTracker("hub", hubConfig, 0)
				spokeGuard, spoke := watchguard.NewTracker("cluster", opts.Registration.SpokeConfig, 0)
				if err := watchguard.Run(ctx, log, []watchguard.Sign{hubGuard, spokeGuard}, func(ctx context.Context) error {
					return work.Run(ctx, work.Options{
						HubConfig:                      hub,
						SpokeConfig:                    spoke,
						ClusterName:                    cluster,
						AgentID:                        agentName,
						StatusSyncInterval:             opts.WorkStatusSyncInterval,
						AppliedWorkEvictionGracePeriod: opts.AppliedWorkEvictionGracePeriod,
						CleanupOnly:                    cleanupOnly,
					})
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
