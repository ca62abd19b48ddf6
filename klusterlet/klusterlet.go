package klusterlet

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

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
			go func() {
				// A watch of the hub that went dead would miss a deny: the
				// guard starts the watch again, listed afresh.
				err := watchguard.Run(ctx, log, []watchguard.Probe{ownClusterProbe(hubConfig, cluster)}, func(ctx context.Context) error {
					return watchOwnCluster(ctx, hubConfig, cluster, states, log)
				})
				if err != nil {
					log.Error(err, "watch the cluster's own ManagedCluster")
				}
			}()
			superviseWork(ctx, states, func(ctx context.Context, cleanupOnly func() bool) error {
				probes := workProbes(hubConfig, opts.Registration.SpokeConfig, cluster)
				if err := watchguard.Run(ctx, log, probes, func(ctx context.Context) error {
					return work.Run(ctx, work.Options{
						HubConfig:                      hubConfig,
						SpokeConfig:                    opts.Registration.SpokeConfig,
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

// ownClusterProbe follows the cluster's own ManagedCluster on the hub (the one
// object its credential may watch).
func ownClusterProbe(hub *rest.Config, cluster string) watchguard.Probe {
	return watchguard.Probe{Name: "hub", Config: hub, Resource: clusterv1.SchemeGroupVersion.WithResource("managedclusters"),
		FieldSelector: "metadata.name=" + cluster}
}

// workProbes follow what the work agent's caches hang on: the cluster's
// ManifestWorks on the hub and the AppliedManifestWorks on the cluster.
func workProbes(hub, spoke *rest.Config, cluster string) []watchguard.Probe {
	return []watchguard.Probe{
		{Name: "hub", Config: hub, Resource: workv1.SchemeGroupVersion.WithResource("manifestworks"), Namespace: cluster},
		{Name: "cluster", Config: spoke, Resource: workv1.SchemeGroupVersion.WithResource("appliedmanifestworks")},
	}
}
