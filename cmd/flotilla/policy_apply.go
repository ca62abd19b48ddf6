package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/policy/configpolicy"
	"flotilla.dev/flotilla/policy/configpolicy/dryrun"
)

func newPolicyApplyCommand() *cobra.Command {
	var kubeconfig, file, namespace string
	cmd := &cobra.Command{
		Use:   "apply -f POLICY.yaml --kubeconfig K",
		Short: "Create or update the ConfigurationPolicies of a file on a cluster (for standalone runs, no kubectl needed)",
		Long: `Creates or updates the ConfigurationPolicies in POLICY.yaml, including those
wrapped in an OCM Policy's spec.policy-templates (the Policy's remediationAction
wins, as on a managed cluster), on the cluster of --kubeconfig.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := restConfig(kubeconfig, "")
			if err != nil {
				return err
			}
			policies, warnings, err := dryrun.ReadPolicies(cmd.InOrStdin(), file)
			for _, w := range warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			if err != nil {
				return err
			}
			done, err := configpolicy.Apply(cmd.Context(), cfg, namespace, policies)
			for i, verb := range done {
				p := policies[i]
				ns := p.Namespace
				if ns == "" {
					ns = namespace
				}
				fmt.Fprintf(cmd.OutOrStdout(), "configurationpolicy %s/%s %s\n", ns, p.Name, verb)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVarP(&file, "filename", "f", "", "file holding the policies (- for standard input)")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace for policies that name none")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}
