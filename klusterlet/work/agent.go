package work

import (
	"context"
	"time"

	"k8s.io/client-go/rest"
)

// Options configures the work agent. Every field documents its default.
type Options struct {
	// HubConfig is the cluster's own hub credential (from registration).
	HubConfig *rest.Config
	// SpokeConfig reaches the managed cluster the agent applies manifests to.
	SpokeConfig *rest.Config
	// ClusterName is the managed cluster's name, which is also its hub namespace.
	ClusterName string
	// AgentID identifies this agent in AppliedManifestWorks. Default: ClusterName.
	AgentID string
	// StatusSyncInterval is how often status and drift are re-checked. Default 10s.
	StatusSyncInterval time.Duration
	// AppliedWorkEvictionGracePeriod is how long an AppliedManifestWork whose
	// ManifestWork is gone is kept before its resources are removed. Default 60m.
	AppliedWorkEvictionGracePeriod time.Duration
}

// Run runs the work agent until ctx ends.
//
// CONTRACT (the klusterlet in klusterlet/ calls this): keep this signature.
func Run(ctx context.Context, opts Options) error {
	<-ctx.Done()
	return nil
}
