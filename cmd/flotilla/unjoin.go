package main

import (
	"errors"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/klusterlet/join"
	"flotilla.dev/flotilla/klusterlet/registration"
)

func newUnjoinCommand() *cobra.Command {
	var (
		o             join.UnjoinOptions
		kubeconfig    string
		kctx          string
		hubKubeconfig string
		cleanupHub    bool
	)
	cmd := &cobra.Command{
		Use:   "unjoin --cluster-name NAME",
		Short: "Remove the klusterlet from this cluster (and, with --cleanup-hub, the cluster from the hub)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// No default: $KUBECONFIG usually names the managed cluster here.
			if cleanupHub && hubKubeconfig == "" {
				return errors.New("--cleanup-hub needs --hub-kubeconfig (the hub admin's kubeconfig); nothing was removed")
			}
			cfg, err := restConfig(kubeconfig, kctx)
			if err != nil {
				return err
			}
			o.SpokeConfig = cfg
			if cleanupHub {
				if o.HubConfig, err = restConfig(hubKubeconfig, ""); err != nil {
					return err
				}
			}
			o.Progress = cmd.ErrOrStderr()
			return join.Unjoin(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ClusterName, "cluster-name", "", "the cluster's name on the hub")
	f.StringVar(&o.AgentNamespace, "agent-namespace", registration.DefaultAgentNamespace, "namespace of the klusterlet on the managed cluster")
	f.BoolVar(&cleanupHub, "cleanup-hub", false, "also delete the ManagedCluster (and its works, add-ons, RBAC, namespace) on the hub")
	f.StringVar(&hubKubeconfig, "hub-kubeconfig", "", "hub kubeconfig for --cleanup-hub (required with it)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "managed cluster kubeconfig (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&kctx, "context", "", "kubeconfig context")
	return cmd
}
