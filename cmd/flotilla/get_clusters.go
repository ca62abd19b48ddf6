package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newGetClustersCommand is `flotilla get clusters` (filled in by registration).
func newGetClustersCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "clusters",
		Aliases: []string{"cluster", "managedclusters"},
		Short:   "List the managed clusters registered with the hub",
		RunE:    func(*cobra.Command, []string) error { return errors.New("not implemented yet") },
	}
}
