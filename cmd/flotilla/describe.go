package main

import "github.com/spf13/cobra"

// newDescribeCommand is the parent of every `flotilla describe <noun>` command.
// Each area adds its own subcommand constructor to the AddCommand list (one line each).
func newDescribeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "Show one fleet resource in detail (policies, ...)",
	}
	cmd.AddCommand(
		newDescribePolicyCommand(),
	)
	return cmd
}
