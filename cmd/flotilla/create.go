package main

import "github.com/spf13/cobra"

// newCreateCommand is the parent of every `flotilla create <noun>` command. Each
// area adds its own subcommand constructor to the AddCommand list (one line each).
func newCreateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create fleet resources (works, placements, cluster sets, ...)",
	}
	cmd.AddCommand(
		newCreateWorkCommand(),
		newCreatePlacementCommand(),
		newCreatePolicyCommand(),
	)
	return cmd
}
