package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newGetTokenCommand is `flotilla get token` (filled in by registration).
func newGetTokenCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "token",
		Short: "Print a bootstrap token and the join command for new clusters",
		RunE:  func(*cobra.Command, []string) error { return errors.New("not implemented yet") },
	}
}
