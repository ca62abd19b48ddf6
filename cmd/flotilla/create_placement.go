package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/hub/placement/ops"
)

// newCreatePlacementCommand is `flotilla create placement NAME`.
func newCreatePlacementCommand() *cobra.Command {
	var (
		kubeconfig, kctx string
		opts             ops.CreateOptions
		labels, claims   []string
		number           int32
	)
	cmd := &cobra.Command{
		Use:   "placement NAME",
		Short: "Create a Placement that selects clusters by set, labels and number",
		Example: `  flotilla create placement web --clusterset default --labels env=prod --number 2 -n apps
  flotilla create placement eu -n apps --claims region=eu --cel 'managedCluster.metadata.labels["tier"] != "dev"'
  flotilla create placement big -n apps --number 3 --prioritizers BuiltIn:ResourceAllocatableMemory:2,AddOn:load:free:1 --exact
  flotilla create placement ranked -n apps --sort-by-score --score-rate-limit 5m
  flotilla get placements -n apps`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			var err error
			if opts.Labels, err = parseLabels(labels); err != nil {
				return err
			}
			if opts.Claims, err = parseKV("--claims", claims); err != nil {
				return err
			}
			if cmd.Flags().Changed("number") {
				opts.NumberOfClusters = &number
			}
			c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			p, err := ops.CreatePlacement(cmd.Context(), c, opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "placement %s/%s created; see its decisions with `flotilla get placements -n %s`\n", p.Namespace, p.Name, p.Namespace)
			return nil
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	f.StringVarP(&opts.Namespace, "namespace", "n", "default", "namespace of the placement")
	f.StringSliceVar(&opts.ClusterSets, "clusterset", nil, "select only from these bound cluster sets (repeatable or comma-separated; default: all bound sets)")
	f.StringSliceVar(&labels, "labels", nil, "cluster labels to require, as key=value (repeatable or comma-separated)")
	f.Int32Var(&number, "number", 0, "number of clusters to select (default: every matching cluster)")
	f.StringSliceVar(&claims, "claims", nil, "cluster claims to require, as name=value (repeatable or comma-separated)")
	f.StringArrayVar(&opts.CEL, "cel", nil, "a CEL expression over managedCluster the clusters must satisfy (repeatable; ANDed)")
	f.StringSliceVar(&opts.Prioritizers, "prioritizers", nil, "prioritizers as BuiltIn:NAME:WEIGHT or AddOn:RESOURCE:SCORE:WEIGHT (clusteradm's form; built-ins: Balance, Steady, ResourceAllocatableCPU, ResourceAllocatableMemory)")
	f.BoolVar(&opts.Exact, "exact", false, "only the listed prioritizers count (prioritizerPolicy mode Exact; default Additive)")
	f.BoolVar(&opts.SortByScore, "sort-by-score", false, "order decisions by score and record the scores (sortBy: Score)")
	f.StringVar(&opts.ScoreRateLimit, "score-rate-limit", "", "with --sort-by-score, write new scores alone at most this often (30s, 5m, 1h; default 1m)")
	return cmd
}

// parseLabels turns --labels ["k=v", ...] into a map, naming the entry that
// is malformed.
func parseLabels(kvs []string) (map[string]string, error) { return parseKV("--labels", kvs) }

// parseKV turns ["k=v", ...] into a map, naming the flag and the entry that is
// malformed.
func parseKV(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want key=value", flag, kv)
		}
		out[k] = v
	}
	return out, nil
}
