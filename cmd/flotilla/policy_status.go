package main

import (
	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/policy/configpolicy"
	"flotilla.dev/flotilla/policy/configpolicy/report"
)

func newPolicyStatusCommand() *cobra.Command {
	var kubeconfig, namespace, output string
	var allNamespaces, history bool
	cmd := &cobra.Command{
		Use:   "status --kubeconfig K [-n NS | -A]",
		Short: "Show the compliance of the ConfigurationPolicies on a cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := restConfig(kubeconfig, "")
			if err != nil {
				return err
			}
			if allNamespaces {
				namespace = ""
			}
			policies, err := configpolicy.List(cmd.Context(), cfg, namespace)
			if err != nil {
				return err
			}
			return report.Print(cmd.OutOrStdout(), policies, output, history)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace of the policies")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "policies of every namespace")
	cmd.Flags().BoolVar(&history, "history", false, "list each policy's compliance history (newest first)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, yaml or json")
	return cmd
}
