package main

import "github.com/spf13/cobra"

// newDeleteCommand is the parent of every `flotilla delete <noun>` command. Each
// area adds its own subcommand constructor to the AddCommand list (one line each).
func newDeleteCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete",
		Short: "Delete fleet resources (works, placements, cluster sets, ...)",
	}
	cmd.AddCommand(
		newDeleteWorkCommand(),
	)
	return cmd
}
