package main

import "github.com/spf13/cobra"

// newPolicyCommand is the parent of the ConfigurationPolicy engine's commands.
func newPolicyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "ConfigurationPolicies: evaluate offline (dryrun), run the engine on a cluster (run), apply and show them (apply, status); generate policies from PolicyGenerator configurations (generate)",
	}
	cmd.AddCommand(newPolicyDryrunCommand(), newPolicyRunCommand(), newPolicyApplyCommand(), newPolicyStatusCommand(), newPolicyGenerateCommand())
	return cmd
}
