package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/ops"
	"flotilla.dev/flotilla/internal/printer"
)

// newGetPlacementsCommand is `flotilla get placements`.
func newGetPlacementsCommand() *cobra.Command {
	var (
		kubeconfig, kctx, output string
		opts                     ops.ListOptions
		all                      bool
	)
	cmd := &cobra.Command{
		Use:     "placements",
		Aliases: []string{"placement"},
		Short:   "List Placements with the clusters they select",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := printer.Validate(output); err != nil {
				return err
			}
			if all {
				opts.Namespace = ""
			}
			c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			views, err := ops.ListPlacements(cmd.Context(), c, opts)
			if err != nil {
				return err
			}
			return printPlacements(cmd.OutOrStdout(), output, views)
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	f.StringVarP(&opts.Namespace, "namespace", "n", "default", "namespace to list")
	f.BoolVarP(&all, "all-namespaces", "A", false, "list placements in every namespace")
	printer.AddFlag(cmd, &output)
	return cmd
}

// maxListed is how many cluster names the table shows per placement.
const maxListed = 5

// printPlacements prints NAMESPACE NAME SUCCEEDED REASON SELECTEDCLUSTERS CLUSTERS
// (the first columns are the Placement CRD's own printer columns).
func printPlacements(w io.Writer, format string, views []ops.PlacementView) error {
	list := map[string]any{"apiVersion": "v1", "kind": "List", "items": views}
	return printer.Print(w, format, list, func() printer.Rows {
		rows := printer.Rows{Header: []string{"NAMESPACE", "NAME", "SUCCEEDED", "REASON", "SELECTEDCLUSTERS", "CLUSTERS"}}
		for _, v := range views {
			succeeded, reason := "Unknown", ""
			if c := meta.FindStatusCondition(v.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied); c != nil {
				succeeded, reason = string(c.Status), c.Reason
			}
			if c := meta.FindStatusCondition(v.Status.Conditions, clusterv1beta1.PlacementConditionMisconfigured); c != nil && c.Status == "True" {
				succeeded, reason = "False", c.Reason
			}
			rows.Add(v.Namespace, v.Name, succeeded, reason, fmt.Sprint(len(v.SelectedClusters)), listedClusters(v.SelectedClusters))
		}
		return rows
	})
}

func listedClusters(names []string) string {
	if len(names) == 0 {
		return "<none>"
	}
	if len(names) <= maxListed {
		return strings.Join(names, ",")
	}
	return fmt.Sprintf("%s,+%d more", strings.Join(names[:maxListed], ","), len(names)-maxListed)
}
