package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/hub/placement/ops"
)

// newClusterSetCommand is `flotilla clusterset set|bind`, as in clusteradm.
func newClusterSetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "clusterset",
		Aliases: []string{"clustersets"},
		Short:   "Group clusters into ManagedClusterSets and bind sets to namespaces",
	}
	cmd.AddCommand(newClusterSetSetCommand(), newClusterSetBindCommand())
	return cmd
}

func newClusterSetSetCommand() *cobra.Command {
	var (
		kubeconfig, kctx string
		opts             ops.SetOptions
	)
	cmd := &cobra.Command{
		Use:     "set NAME --clusters a,b",
		Short:   "Move clusters into a ManagedClusterSet (created if missing)",
		Example: "  flotilla clusterset set prod --clusters cluster1,cluster2",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Set = args[0]
			opts.Progress = cmd.OutOrStdout()
			c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return ops.SetClusterSet(cmd.Context(), c, opts)
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	f.StringSliceVar(&opts.Clusters, "clusters", nil, "clusters to move into the set (comma-separated)")
	_ = cmd.MarkFlagRequired("clusters")
	return cmd
}

func newClusterSetBindCommand() *cobra.Command {
	var (
		kubeconfig, kctx string
		opts             ops.BindOptions
	)
	cmd := &cobra.Command{
		Use:     "bind NAME -n NAMESPACE",
		Short:   "Bind a ManagedClusterSet to a namespace so its Placements can select the set's clusters",
		Example: "  flotilla clusterset bind prod -n apps",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Set = args[0]
			c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			created, err := ops.BindClusterSet(cmd.Context(), c, opts)
			if err != nil {
				return err
			}
			if created {
				fmt.Fprintf(cmd.OutOrStdout(), "ManagedClusterSet %s bound to namespace %s\n", opts.Set, opts.Namespace)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "ManagedClusterSet %s is already bound to namespace %s\n", opts.Set, opts.Namespace)
			}
			return nil
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	f.StringVarP(&opts.Namespace, "namespace", "n", "default", "namespace to bind the set to")
	return cmd
}
