package main

import "github.com/spf13/cobra"

// newGetCommand is the parent of every `flotilla get <noun>` command. Each area
// adds its own subcommand constructor to the AddCommand list (one line each).
func newGetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get",
		Short: "Display fleet resources (clusters, token, works, placements, ...)",
	}
	cmd.AddCommand(
		newGetWorksCommand(),
		newGetClustersCommand(),
		newGetTokenCommand(),
		newGetPlacementsCommand(),
		newGetAddonsCommand(),
		newGetPoliciesCommand(),
	)
	return cmd
}
