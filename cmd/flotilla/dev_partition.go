package main

import (
	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/devenv"
)

// newDevPartitionCommand cuts a managed cluster of a --nodes environment off
// the hub, to see what a network failure does; `dev heal` ends it.
func newDevPartitionCommand(opts *devenv.Options) *cobra.Command {
	return &cobra.Command{
		Use:   "partition CLUSTER",
		Short: "Cut a managed cluster's Pods off the hub (environments with --nodes)",
		Long: "Drops every packet between the Pods of CLUSTER's node (its klusterlet and addon agents) and the hub's " +
			"apiserver, both ways, established connections included, as a failed network would. The cluster keeps running; on " +
			"the hub it goes Unknown and tainted once its lease runs out. `flotilla dev heal CLUSTER` ends the " +
			"partition, and `dev down` removes it too.",
		Example: "  flotilla dev partition cluster1\n  flotilla dev heal cluster1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := *opts
			o.Out = cmd.OutOrStdout()
			return devenv.Partition(o, args[0])
		},
	}
}

func newDevHealCommand(opts *devenv.Options) *cobra.Command {
	return &cobra.Command{
		Use:   "heal CLUSTER",
		Short: "End a partition made by `flotilla dev partition`",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := *opts
			o.Out = cmd.OutOrStdout()
			return devenv.Heal(o, args[0])
		},
	}
}
