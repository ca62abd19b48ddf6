package main

import "github.com/spf13/cobra"

func newDevCommand() *cobra.Command {
	return &cobra.Command{Use: "dev", Short: "Run Flotilla's local default on this machine"}
}
