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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/governance"
	"flotilla.dev/flotilla/addons/ops"
	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/hub/registration/accept"
	"flotilla.dev/flotilla/hub/registration/bootstrap"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/klusterlet"
	"flotilla.dev/flotilla/klusterlet/join"
	"flotilla.dev/flotilla/klusterlet/registration"
	"flotilla.dev/flotilla/policy/agent"
	"flotilla.dev/flotilla/test/hubtest"
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

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run starts a hub (hub.Run with the shipped addons) and two klusterlets,
// enables both governance addons on both clusters and runs their agents as
// `flotilla dev` does (processes next to the klusterlet, each with its own
// hub credential).
func run(m *testing.M) int {
	ctrl.SetLogger(klog.Background())
	var err error
	env, err = testenv.New(testenv.Options{Clusters: 2})
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
	res, err := bootstrap.Init(ctx, bootstrap.Options{Config: env.Hub.Config})
	if err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		return 1
	}
	hubDone, err := hubtest.Start(ctx, hub.Options{Config: env.Hub.Config}, timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var names []string
	for _, spoke := range env.Clusters {
		name := spoke.Name
		names = append(names, name)
		if err := join.Join(ctx, join.Options{SpokeConfig: spoke.Config, HubAPIServer: env.Hub.URL, HubToken: res.Token, ClusterName: name, NoDeployment: true}); err != nil {
			fmt.Fprintln(os.Stderr, "join:", err)
			return 1
		}
		dir, _ := os.MkdirTemp("", "flotilla-governance-e2e-")
		defer os.RemoveAll(dir)
		go func() {
			_ = klusterlet.Run(ctx, klusterlet.Options{
				Registration: registration.Options{ClusterName: name, SpokeConfig: spoke.Config, HubKubeconfigDir: dir,
					LeaseDurationSeconds: 5, StatusSyncInterval: time.Second, RetryInterval: time.Second, AddonSyncInterval: 500 * time.Millisecond},
				WorkStatusSyncInterval: time.Second,
			})
		}()
		if name == gatekeeperCluster {
			// cluster2 plays a cluster with Gatekeeper installed: its
			// ConstraintTemplate CRD exists before the agents start.
			if err := installFakeGatekeeper(ctx, spoke.Config); err != nil {
				fmt.Fprintln(os.Stderr, "gatekeeper CRD:", err)
				return 1
			}
		}
		o := agent.Options{SpokeConfig: spoke.Config, ClusterName: name, LeaseDuration: 5 * time.Second,
			CredentialInterval: 200 * time.Millisecond, Log: klog.Background()}
		go func() { _ = agent.RunFramework(ctx, o) }()
		go func() { _ = agent.RunConfigPolicy(ctx, o) }()
	}
	if err := accept.Accept(ctx, accept.Options{Config: env.Hub.Config, Clusters: names, Wait: true, Timeout: timeout}); err != nil {
		fmt.Fprintln(os.Stderr, "accept:", err)
		return 1
	}
	if _, err := ops.Enable(ctx, hubCli, ops.EnableOptions{Names: []string{governance.FrameworkName, governance.ConfigPolicyName}, Clusters: names}); err != nil {
		fmt.Fprintln(os.Stderr, "enable:", err)
		return 1
	}
	code := m.Run()
	cancel()
	<-hubDone
	return code
}
