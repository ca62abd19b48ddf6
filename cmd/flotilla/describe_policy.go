package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/printer"
	"flotilla.dev/flotilla/policy/ops"
)

// newDescribePolicyCommand is `flotilla describe policy NAME`.
func newDescribePolicyCommand() *cobra.Command {
	var kubeconfig, kctx, output, namespace string
	cmd := &cobra.Command{
		Use:   "policy NAME",
		Short: "Show a root Policy: its bindings, each cluster's compliance and last messages",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := printer.Validate(output); err != nil {
				return err
			}
			c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			d, err := ops.Describe(cmd.Context(), c, namespace, args[0])
			if err != nil {
				return err
			}
			return printPolicyDescription(cmd.OutOrStdout(), output, d)
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	f.StringVarP(&namespace, "namespace", "n", "default", "namespace of the policy")
	printer.AddFlag(cmd, &output)
	return cmd
}

// printPolicyDescription prints a summary, the bindings and one block per
// cluster; -o json|yaml prints the Description.
func printPolicyDescription(w io.Writer, format string, d *ops.Description) error {
	if format != printer.Table && format != "" {
		return printer.Print(w, format, d, nil)
	}
	p := d.Policy
	var b strings.Builder
	fmt.Fprintf(&b, "Name:                %s\n", p.Name)
	fmt.Fprintf(&b, "Namespace:           %s\n", p.Namespace)
	for _, a := range []struct{ label, key string }{{"Standards", policyv1.StandardsAnnotation},
		{"Categories", policyv1.CategoriesAnnotation}, {"Controls", policyv1.ControlsAnnotation}} {
		if v := p.Annotations[a.key]; v != "" {
			fmt.Fprintf(&b, "%-21s%s\n", a.label+":", v)
		}
	}
	action := string(p.Spec.RemediationAction)
	if action == "" {
		action = "<per template>"
	}
	fmt.Fprintf(&b, "Remediation action:  %s\n", action)
	fmt.Fprintf(&b, "Disabled:            %t\n", p.Spec.Disabled)
	fmt.Fprintf(&b, "Compliance state:    %s\n", orUnknown(p.Status.ComplianceState))
	b.WriteString("Placement:\n")
	if len(p.Status.Placement) == 0 {
		b.WriteString("  <not bound>\n")
	}
	for _, pl := range p.Status.Placement {
		target := "Placement " + pl.Placement
		if pl.PlacementRule != "" {
			target = "PlacementRule " + pl.PlacementRule
		}
		via := ""
		if pl.PolicySet != "" {
			via = " (through PolicySet " + pl.PolicySet + ")"
		}
		fmt.Fprintf(&b, "  PlacementBinding %s -> %s%s\n", pl.PlacementBinding, target, via)
	}
	b.WriteString("Clusters:\n")
	if len(d.Clusters) == 0 {
		b.WriteString("  <none>\n")
	}
	for _, c := range d.Clusters {
		fmt.Fprintf(&b, "  %s: %s\n", c.Cluster, orUnknown(c.Compliant))
		for _, t := range c.Templates {
			fmt.Fprintf(&b, "    %s: %s", t.Name, orUnknown(t.Compliant))
			if t.LastMessage != "" {
				fmt.Fprintf(&b, " (%s) %s", t.LastTime, t.LastMessage)
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
