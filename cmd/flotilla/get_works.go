package main

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/hub/work/ops"
	"flotilla.dev/flotilla/internal/printer"
)

// newGetWorksCommand is `flotilla get works` (a table of works per cluster) and
// `flotilla get work NAME --cluster c` (one work's manifests, conditions and
// feedback values).
func newGetWorksCommand() *cobra.Command {
	var (
		kubeconfig, kctx string
		output           string
		clusters         []string
		cluster          string
		replicaSets      bool
		namespace        string
	)
	cmd := &cobra.Command{
		Use:     "works [NAME --cluster c]",
		Aliases: []string{"work", "manifestworks", "manifestwork"},
		Short:   "List ManifestWorks with their status, or show one work's manifests",
		Example: `  flotilla get works
  flotilla get works --clusters cluster1,cluster2 -o yaml
  flotilla get work web --cluster cluster1
  flotilla get works --replicaset -n apps
  flotilla get works --replicaset -o yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := printer.Validate(output); err != nil {
				return err
			}
			c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if replicaSets {
				if len(args) == 1 || cluster != "" || len(clusters) > 0 {
					return errors.New("--replicaset lists ManifestWorkReplicaSets: give at most -n NAMESPACE")
				}
				sets, err := ops.ListReplicaSets(cmd.Context(), c, namespace)
				if err != nil {
					return err
				}
				return ops.PrintReplicaSets(cmd.OutOrStdout(), output, sets)
			}
			if namespace != "" {
				return errors.New("-n selects the namespace of --replicaset; a work's namespace is its cluster: use --clusters")
			}
			if len(args) == 1 {
				if cluster == "" && len(clusters) == 1 {
					cluster = clusters[0]
				}
				if cluster == "" {
					return errors.New("showing one work needs its cluster: flotilla get work NAME --cluster CLUSTER")
				}
				w, err := ops.GetWork(cmd.Context(), c, cluster, args[0])
				if err != nil {
					return err
				}
				return ops.PrintWork(cmd.OutOrStdout(), output, w)
			}
			if cluster != "" {
				clusters = append(clusters, cluster)
			}
			works, err := ops.ListWorks(cmd.Context(), c, ops.ListOptions{Clusters: clusters})
			if err != nil {
				return err
			}
			return ops.PrintWorks(cmd.OutOrStdout(), output, works, time.Now())
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	f.StringSliceVar(&clusters, "clusters", nil, "only these clusters' works (comma-separated or repeated; default: all)")
	f.StringVar(&cluster, "cluster", "", "the cluster of the work NAME")
	f.BoolVar(&replicaSets, "replicaset", false, "list ManifestWorkReplicaSets instead: their works, DistributionPolicy, and the divided workloads' ready/available/desired replicas summed over the clusters")
	f.StringVarP(&namespace, "namespace", "n", "", "with --replicaset: only this namespace (default: all)")
	printer.AddFlag(cmd, &output)
	return cmd
}
