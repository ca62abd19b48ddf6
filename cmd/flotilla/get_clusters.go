package main

import (
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/internal/printer"
)

// newGetClustersCommand is `flotilla get clusters`, with clusteradm's columns.
func newGetClustersCommand() *cobra.Command {
	var (
		kubeconfig string
		kctx       string
		output     string
	)
	cmd := &cobra.Command{
		Use:     "clusters",
		Aliases: []string{"cluster", "managedclusters"},
		Short:   "List the managed clusters registered with the hub",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := printer.Validate(output); err != nil {
				return err
			}
			c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			list := &clusterv1.ManagedClusterList{}
			if err := c.List(cmd.Context(), list); err != nil {
				return fmt.Errorf("list ManagedClusters: %w", err)
			}
			return printClusters(cmd.OutOrStdout(), output, list)
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	printer.AddFlag(cmd, &output)
	return cmd
}

// clusterSetLabel assigns a ManagedCluster to a ManagedClusterSet.
const clusterSetLabel = "cluster.open-cluster-management.io/clusterset"

// printClusters prints ManagedClusters with clusteradm's columns NAME ACCEPTED
// AVAILABLE CLUSTERSET CPU MEMORY KUBERNETES VERSION.
func printClusters(w io.Writer, format string, list *clusterv1.ManagedClusterList) error {
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	list.APIVersion, list.Kind = "v1", "List"
	for i := range list.Items {
		list.Items[i].APIVersion, list.Items[i].Kind = clusterv1.GroupVersion.String(), "ManagedCluster"
	}
	return printer.Print(w, format, list, func() printer.Rows {
		rows := printer.Rows{Header: []string{"NAME", "ACCEPTED", "AVAILABLE", "CLUSTERSET", "CPU", "MEMORY", "KUBERNETES VERSION"}}
		for _, c := range list.Items {
			available := "Unknown"
			if cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1.ManagedClusterConditionAvailable); cond != nil {
				available = string(cond.Status)
			}
			cpu, mem := "", ""
			if q, ok := c.Status.Capacity[clusterv1.ResourceCPU]; ok {
				cpu = q.String()
			}
			if q, ok := c.Status.Capacity[clusterv1.ResourceMemory]; ok {
				mem = q.String()
			}
			rows.Add(c.Name, fmt.Sprint(c.Spec.HubAcceptsClient), available, c.Labels[clusterSetLabel], cpu, mem, c.Status.Version.Kubernetes)
		}
		return rows
	})
}
