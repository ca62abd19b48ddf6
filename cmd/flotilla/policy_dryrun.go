package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/policy/configpolicy/dryrun"
)

func newPolicyDryrunCommand() *cobra.Command {
	opts := dryrun.Options{}
	var output, kubeconfig string
	cmd := &cobra.Command{
		Use:   "dryrun -f POLICY.yaml [--from DIR|FILE]... | [--kubeconfig K]",
		Short: "Evaluate ConfigurationPolicies, CertificatePolicies and Gatekeeper constraints against objects in YAML files, with no cluster",
		Long: `Evaluates the ConfigurationPolicies in POLICY.yaml (also those wrapped in an OCM
Policy's spec.policy-templates) against the objects read from --from files and
folders (or from the live cluster of --kubeconfig, changing nothing), as the
engine would on a cluster. Prints each template's compliance and
message, the related objects, and what enforce would create, update or delete.

CertificatePolicies in POLICY.yaml (plain, or in a Policy's policy-templates)
check the TLS certificates of the Secrets among the objects, as the
certificate engine would on a cluster at this moment.

Gatekeeper ConstraintTemplates and constraints in POLICY.yaml (plain, or in a
Policy's policy-templates) are audited against the --from objects by
Flotilla's own Rego engine, with no Gatekeeper: each violation's msg is
printed with the object it is about (enforcementAction deny: NonCompliant;
warn and dryrun: warnings).

Exit code: 0 Compliant, 2 NonCompliant, 1 error.`,
		Example: `  flotilla policy dryrun -f policy-namespace.yaml --from cluster-dump/
  kubectl get ns -o yaml | flotilla policy dryrun -f policy.yaml --from -
  flotilla policy dryrun -f policy.yaml --kubeconfig cluster1.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Stdin = cmd.InOrStdin()
			if kubeconfig != "" {
				cfg, err := restConfig(kubeconfig, "")
				if err != nil {
					return &exitError{code: dryrun.ExitError, err: err}
				}
				opts.Cluster = cfg
			}
			rep, err := dryrun.Run(cmd.Context(), opts)
			if err != nil {
				return &exitError{code: dryrun.ExitError, err: err}
			}
			if err := dryrun.Print(cmd.OutOrStdout(), rep, output); err != nil {
				return err
			}
			if code := dryrun.ExitCode(rep, nil); code != dryrun.ExitCompliant {
				return &exitError{code: code, err: fmt.Errorf("%d of %d policies and constraints are NonCompliant", rep.NonCompliant(), len(rep.Policies)+len(rep.Constraints))}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&opts.PolicyFile, "filename", "f", "", "file holding the policies (- for standard input)")
	cmd.Flags().StringSliceVar(&opts.From, "from", nil, "files or folders (searched recursively for *.yaml, *.yml, *.json) holding the cluster's objects; repeatable")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "read the objects from this live cluster instead of --from (read-only: updates are checked with a server-side dry-run)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, yaml or json")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}
