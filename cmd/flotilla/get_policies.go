package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/printer"
	"flotilla.dev/flotilla/policy/ops"
)

// newGetPoliciesCommand is `flotilla get policies`.
func newGetPoliciesCommand() *cobra.Command {
	var (
		kubeconfig, kctx, output, namespace string
		all, clusters                       bool
	)
	cmd := &cobra.Command{
		Use:     "policies",
		Aliases: []string{"policy", "plc"},
		Short:   "List root Policies with their compliance (per cluster with --clusters)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := printer.Validate(output); err != nil {
				return err
			}
			if all {
				namespace = ""
			}
			c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			list, err := ops.List(cmd.Context(), c, namespace)
			if err != nil {
				return err
			}
			return printPolicies(cmd.OutOrStdout(), output, list, clusters)
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	f.StringVarP(&namespace, "namespace", "n", "default", "namespace to list")
	f.BoolVarP(&all, "all-namespaces", "A", false, "list policies in every namespace")
	f.BoolVar(&clusters, "clusters", false, "one row per policy and cluster")
	printer.AddFlag(cmd, &output)
	return cmd
}

// printPolicies prints NAMESPACE NAME REMEDIATION ACTION COMPLIANCE STATE
// CLUSTERS (compliant/total), or with perCluster one row per cluster.
func printPolicies(w io.Writer, format string, list []policyv1.Policy, perCluster bool) error {
	items := list
	if items == nil {
		items = []policyv1.Policy{}
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
	return printer.Print(w, format, obj, func() printer.Rows {
		if perCluster {
			rows := printer.Rows{Header: []string{"NAMESPACE", "NAME", "CLUSTER", "COMPLIANCE STATE"}}
			for _, p := range list {
				for _, s := range p.Status.Status {
					rows.Add(p.Namespace, p.Name, s.ClusterName, orUnknown(s.ComplianceState))
				}
			}
			return rows
		}
		rows := printer.Rows{Header: []string{"NAMESPACE", "NAME", "REMEDIATION ACTION", "COMPLIANCE STATE", "CLUSTERS"}}
		for _, p := range list {
			compliant := 0
			for _, s := range p.Status.Status {
				if s.ComplianceState == policyv1.Compliant {
					compliant++
				}
			}
			action := string(p.Spec.RemediationAction)
			if action == "" {
				action = "<per template>"
			}
			state := orUnknown(p.Status.ComplianceState)
			if p.Spec.Disabled {
				state = "Disabled"
			}
			rows.Add(p.Namespace, p.Name, action, state, fmt.Sprintf("%d/%d compliant", compliant, len(p.Status.Status)))
		}
		return rows
	})
}

func orUnknown(s policyv1.ComplianceState) string {
	if s == "" {
		return "Unknown"
	}
	return string(s)
}
