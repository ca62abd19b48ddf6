// Package governance_test tests the spoke side of governance end to end on
// real apiservers: a hub (hub.Run: propagator and addon manager), two
// klusterlets, and the governance-policy-framework and
// config-policy-controller agents of each cluster, in-process.
package governance_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/governance"
	"flotilla.dev/flotilla/addons/ops"
	"flotilla.dev/flotilla/policy/agent"
	"flotilla.dev/flotilla/test/fleet"
	"flotilla.dev/flotilla/test/testenv"
)

var (
	env    *testenv.Env
	hubCli client.Client
)

const (
	timeout = 2 * time.Minute
	tick    = 200 * time.Millisecond
)

// TestMain starts a hub (the shipped addons) and two klusterlets, runs both
// governance agents next to each as `flotilla dev` does (each with its own
// hub credential), and enables both governance addons on both clusters.
// cluster2 plays a cluster with Gatekeeper installed: its ConstraintTemplate
// CRD exists before the agents start.
func TestMain(m *testing.M) {
	os.Exit(fleet.Main(m, fleet.Options{Clusters: 2, Join: true,
		Cluster: func(ctx context.Context, f *fleet.Fleet, i int) error {
			spoke := f.Clusters[i]
			if spoke.Name == gatekeeperCluster {
				if err := installFakeGatekeeper(ctx, spoke.Config); err != nil {
					return fmt.Errorf("gatekeeper CRD: %w", err)
				}
			}
			o := agent.Options{SpokeConfig: spoke.Config, ClusterName: spoke.Name, LeaseDuration: 5 * time.Second,
				CredentialInterval: 200 * time.Millisecond, Log: klog.Background()}
			go func() { _ = agent.RunFramework(ctx, o) }()
			go func() { _ = agent.RunConfigPolicy(ctx, o) }()
			return nil
		},
		Setup: func(ctx context.Context, f *fleet.Fleet) error {
			env, hubCli = f.Env, f.Client
			_, err := ops.Enable(ctx, hubCli, ops.EnableOptions{Names: []string{governance.FrameworkName, governance.ConfigPolicyName}, Clusters: f.Names})
			return err
		}}, nil))
}
