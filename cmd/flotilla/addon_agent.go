package main

import (
	"context"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"flotilla.dev/flotilla/addons/example"
	"flotilla.dev/flotilla/addons/governance"
	"flotilla.dev/flotilla/addons/search"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/policy/agent"
	searchagent "flotilla.dev/flotilla/search/agent"
)

// newAddonAgentCommand is `flotilla addon-agent <addon>`: the agents of the
// addons Flotilla ships, one subcommand each. They run in a Pod the addon's
// works deliver, or as processes next to the klusterlets (`flotilla dev`).
func newAddonAgentCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "addon-agent", Short: "Run the agent of an addon Flotilla ships"}
	cmd.AddCommand(newExampleAgentCommand(),
		newGovernanceAgentCommand(governance.FrameworkName, "Run the policy framework agent (spec, template and status sync of the cluster's policies)", agent.RunFramework),
		newGovernanceAgentCommand(governance.ConfigPolicyName, "Run the ConfigurationPolicy engine on the managed cluster", agent.RunConfigPolicy),
		newSearchAgentCommand())
	return cmd
}

// newSearchAgentCommand is the search agent, as the slim
// flotilla-search-agent binary the addon's Pods run also has it.
func newSearchAgentCommand() *cobra.Command {
	return searchagent.NewCommand(search.Name)
}

func newExampleAgentCommand() *cobra.Command {
	var (
		o                example.AgentOptions
		kubeconfig, kctx string
	)
	cmd := &cobra.Command{
		Use:   example.Name + " --cluster-name NAME",
		Short: "Run the example addon's agent (lease, and ConfigMaps copied from the hub)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := restConfig(kubeconfig, kctx)
			if err != nil {
				return err
			}
			o.SpokeConfig = cfg
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return example.RunAgent(klog.NewContext(ctx, klog.Background()), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ClusterName, "cluster-name", "", "the managed cluster's name on the hub (required)")
	f.StringVar(&o.Namespace, "namespace", ocm.DefaultAddonInstallNamespace, "install namespace (its Lease and hub credential Secret)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "managed cluster kubeconfig (default: in-cluster config, $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&kctx, "context", "", "kubeconfig context")
	f.DurationVar(&o.Interval, "interval", 10*time.Second, "time between rounds")
	f.DurationVar(&o.LeaseDuration, "lease-duration", 60*time.Second, "duration written on the Lease (stale after 5x)")
	return cmd
}

func newGovernanceAgentCommand(name, short string, run func(context.Context, agent.Options) error) *cobra.Command {
	var (
		o                agent.Options
		kubeconfig, kctx string
	)
	cmd := &cobra.Command{
		Use:   name + " --cluster-name NAME",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := restConfig(kubeconfig, kctx)
			if err != nil {
				return err
			}
			o.SpokeConfig = cfg
			o.Log = klog.Background()
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return run(klog.NewContext(ctx, o.Log), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ClusterName, "cluster-name", "", "the managed cluster's name on the hub (required)")
	f.StringVar(&o.Namespace, "namespace", ocm.DefaultAddonInstallNamespace, "install namespace (its Lease and hub credential Secret)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "managed cluster kubeconfig (default: in-cluster config, $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&kctx, "context", "", "kubeconfig context")
	f.DurationVar(&o.LeaseDuration, "lease-duration", 60*time.Second, "duration written on the Lease (stale after 5x)")
	return cmd
}
