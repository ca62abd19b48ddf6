package main

import (
	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/hub/work/ops"
)

// newDeleteWorkCommand is `flotilla delete work NAME --clusters a,b`.
func newDeleteWorkCommand() *cobra.Command {
	var (
		kubeconfig, kctx string
		opts             ops.DeleteOptions
	)
	cmd := &cobra.Command{
		Use:     "work NAME --clusters a,b",
		Aliases: []string{"works", "manifestwork"},
		Short:   "Delete a ManifestWork from clusters (each agent removes its resources first)",
		Example: `  flotilla delete work web --clusters cluster1,cluster2`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			opts.Progress = cmd.OutOrStdout()
			_, err = ops.DeleteWorks(cmd.Context(), c, opts)
			return err
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	f.StringSliceVar(&opts.Clusters, "clusters", nil, "clusters to delete the work from (comma-separated or repeated)")
	_ = cmd.MarkFlagRequired("clusters")
	return cmd
}
