package main

import "github.com/spf13/cobra"

// newPolicyCommand is the parent of the ConfigurationPolicy engine's commands.
func newPolicyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Evaluate ConfigurationPolicies offline (dryrun) or run the policy engine against a cluster (run)",
	}
	cmd.AddCommand(newPolicyDryrunCommand(), newPolicyRunCommand())
	return cmd
}
