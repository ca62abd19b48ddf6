package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/policy/ops"
)

// newCreatePolicyCommand is `flotilla create policy NAME -f FILE`.
func newCreatePolicyCommand() *cobra.Command {
	var (
		kubeconfig, kctx string
		opts             ops.CreateOptions
	)
	cmd := &cobra.Command{
		Use:   "policy NAME -f configpolicy.yaml",
		Short: "Create a Policy wrapping ConfigurationPolicies, CertificatePolicies or OperatorPolicies, and bind it to a Placement",
		Example: `  flotilla create policy policy-namespace -f namespace.yaml -n policies \
      --standards "NIST SP 800-53" --categories "CM Configuration Management" \
      --controls "CM-2 Baseline Configuration" --placement all-clusters
  flotilla get policies -n policies --clusters`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name, opts.Stdin = args[0], cmd.InOrStdin()
			c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out, err := ops.Create(cmd.Context(), c, opts)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "policy %s/%s created\n", out.Policy.Namespace, out.Policy.Name)
			if out.Binding != nil {
				fmt.Fprintf(w, "placementbinding %s/%s created (placement %s)\n", out.Binding.Namespace, out.Binding.Name, opts.Placement)
			}
			return nil
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	f.StringVarP(&opts.Namespace, "namespace", "n", "default", "namespace of the policy (and its binding)")
	f.StringVarP(&opts.File, "filename", "f", "", "file of ConfigurationPolicy, CertificatePolicy or OperatorPolicy documents, or - for stdin (required)")
	f.StringSliceVar(&opts.Standards, "standards", nil, "standards the policy implements (annotation policy.open-cluster-management.io/standards)")
	f.StringSliceVar(&opts.Categories, "categories", nil, "categories (annotation policy.open-cluster-management.io/categories)")
	f.StringSliceVar(&opts.Controls, "controls", nil, "controls (annotation policy.open-cluster-management.io/controls)")
	f.StringVar(&opts.RemediationAction, "remediation-action", "", "inform or enforce, overriding every template's (default: each template's own)")
	f.StringVar(&opts.Placement, "placement", "", "bind the policy to this Placement of its namespace (PlacementBinding binding-NAME)")
	return cmd
}
