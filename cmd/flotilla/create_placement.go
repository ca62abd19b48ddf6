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
		labels           []string
		number           int32
	)
	cmd := &cobra.Command{
		Use:   "placement NAME",
		Short: "Create a Placement that selects clusters by set, labels and number",
		Example: `  flotilla create placement web --clusterset default --labels env=prod --number 2 -n apps
  flotilla get placements -n apps`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			var err error
			if opts.Labels, err = parseLabels(labels); err != nil {
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
	return cmd
}

// parseLabels turns ["k=v", ...] into a map, naming the entry that is malformed.
func parseLabels(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--labels %q: want key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}
