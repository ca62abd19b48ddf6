package main

import (
	"io"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/addons/ops"
	"flotilla.dev/flotilla/internal/printer"
)

// newGetAddonsCommand is `flotilla get addon [NAME] [--cluster c]`.
func newGetAddonsCommand() *cobra.Command {
	var (
		kubeconfig, kctx, output string
		o                        ops.ListOptions
	)
	cmd := &cobra.Command{
		Use:     "addon [NAME] [--cluster c]",
		Aliases: []string{"addons", "managedclusteraddons", "managedclusteraddon"},
		Short:   "List addons and their status on each cluster",
		Example: `  flotilla get addon
  flotilla get addon example --cluster cluster1 -o yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := printer.Validate(output); err != nil {
				return err
			}
			if len(args) == 1 {
				o.Name = args[0]
			}
			c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			rows, err := ops.List(cmd.Context(), c, o)
			if err != nil {
				return err
			}
			return printAddons(cmd.OutOrStdout(), output, rows, o.Cluster != "")
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	f.StringVar(&o.Cluster, "cluster", "", "only this cluster's addons")
	printer.AddFlag(cmd, &output)
	return cmd
}

// printAddons writes rows; the table has clusteradm's columns NAME, AVAILABLE,
// DEGRADED, PROGRESSING, with CLUSTER after NAME unless one cluster was asked for.
func printAddons(w io.Writer, format string, rows []ops.Row, oneCluster bool) error {
	if rows == nil {
		rows = []ops.Row{}
	}
	return printer.Print(w, format, rows, func() printer.Rows {
		t := printer.Rows{Header: []string{"NAME", "CLUSTER", "AVAILABLE", "DEGRADED", "PROGRESSING"}}
		if oneCluster {
			t.Header = []string{"NAME", "AVAILABLE", "DEGRADED", "PROGRESSING"}
		}
		for _, r := range rows {
			cells := []string{r.Name, orDash(r.Cluster), orDash(r.Available), orDash(r.Degraded), orDash(r.Progressing)}
			if oneCluster {
				cells = append(cells[:1], cells[2:]...)
			}
			t.Add(cells...)
		}
		return t
	})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
