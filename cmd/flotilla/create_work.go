package main

import (
	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/hub/work/ops"
)

// newCreateWorkCommand is `flotilla create work NAME -f FILE|DIR`, with
// clusteradm's flags.
func newCreateWorkCommand() *cobra.Command {
	var (
		kubeconfig, kctx string
		files            []string
		opts             ops.CreateOptions
		ttl              int64
	)
	cmd := &cobra.Command{
		Use:   "work NAME -f FILE|DIR",
		Short: "Create a ManifestWork in each given cluster (or each cluster a placement selected)",
		Example: `  flotilla create work web -f web.yaml --clusters cluster1,cluster2
  flotilla create work web -f manifests/ --placement apps/web
  flotilla create work web -f web.yaml --placement apps/web --replicaset
  flotilla create work web -f web.yaml --placement apps/web --replicaset --distribution-policy regions
  flotilla create work web -f web-v2.yaml --clusters cluster1 --overwrite
  flotilla create work web -f web.yaml --clusters cluster1 --executor app/deployer
  flotilla create work web -f web.yaml --clusters cluster1 --ignore-field .spec.replicas --well-known-conditions
  flotilla create work migrate -f job.yaml --clusters cluster1 --well-known-conditions --ttl-after-finished 300`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if cmd.Flags().Changed("ttl-after-finished") {
				opts.TTLAfterFinished = &ttl
			}
			var err error
			if opts.Manifests, err = ops.LoadManifests(files...); err != nil {
				return err
			}
			c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			opts.Progress = cmd.OutOrStdout()
			_, err = ops.CreateWorks(cmd.Context(), c, opts)
			return err
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	f.StringSliceVarP(&files, "file", "f", nil, "manifest file or directory (YAML or JSON; repeatable)")
	f.StringSliceVar(&opts.Clusters, "clusters", nil, "clusters to create the work in (comma-separated or repeated)")
	f.StringVarP(&opts.Namespace, "namespace", "n", "", "a cluster namespace to create the work in; with --replicaset, the ManifestWorkReplicaSet's namespace (the placement's)")
	f.StringVar(&opts.Placement, "placement", "", "namespace/name of a placement: create the work in every cluster it selected")
	f.BoolVar(&opts.ReplicaSet, "replicaset", false, "create a ManifestWorkReplicaSet that follows --placement instead of works")
	f.StringVar(&opts.DistributionPolicy, "distribution-policy", "", "with --replicaset: a DistributionPolicy (flotilla.dev) in the placement's namespace that renders each cluster's work (overrides, replica division)")
	f.BoolVar(&opts.Overwrite, "overwrite", false, "replace the work where it already exists")
	f.StringVar(&opts.Executor, "executor", "", "NAMESPACE/NAME of a ServiceAccount on the managed cluster to apply the work as (spec.executor; you need RBAC execute-as for it)")
	f.StringVar(&opts.UpdateStrategy, "update-strategy", "", "update strategy of every manifest: Update (default), CreateOnly, ServerSideApply or ReadOnly")
	f.StringSliceVar(&opts.IgnoreFields, "ignore-field", nil, "a field every manifest leaves to the managed cluster, as a JSON pointer (/spec/replicas) or JSONPath (.spec.replicas), optionally with :OnSpokeChange (default :OnSpokePresent); implies ServerSideApply (repeatable)")
	f.Int64Var(&ttl, "ttl-after-finished", 0, "delete the work this many seconds after it is Complete (deleteOption.ttlSecondsAfterFinished; see --well-known-conditions)")
	f.BoolVar(&opts.WellKnownConditions, "well-known-conditions", false, "add the built-in condition rules for each manifest's kind (Job: Complete, Degraded; Pod: Complete; Deployment: Progressing, Degraded)")
	return cmd
}
