// Package report prints ConfigurationPolicies for people (a table like
// `kubectl get configurationpolicies` with the message) or as YAML or JSON:
// the printer behind `flotilla policy status`.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// Print writes policies as a table (default), yaml or json. With history,
// the table lists each policy's history under it.
func Print(w io.Writer, policies []policyv1.ConfigurationPolicy, format string, history bool) error {
	switch format {
	case "", "table":
		return Table(w, policies, history)
	case "yaml":
		out, err := yaml.Marshal(list(policies))
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(list(policies))
	}
	return fmt.Errorf("unknown output format %q: use table, yaml or json", format)
}

func list(policies []policyv1.ConfigurationPolicy) map[string]any {
	items := make([]policyv1.ConfigurationPolicy, len(policies))
	for i, p := range policies {
		p.APIVersion, p.Kind = policyv1.GroupVersion.String(), "ConfigurationPolicy"
		p.ManagedFields = nil
		items[i] = p
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
}

// Table writes NAMESPACE, NAME, REMEDIATION, COMPLIANCE, MESSAGE.
func Table(w io.Writer, policies []policyv1.ConfigurationPolicy, history bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tREMEDIATION\tCOMPLIANCE\tMESSAGE")
	for _, p := range policies {
		state := string(p.Status.ComplianceState)
		if state == "" {
			state = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name, strings.ToLower(string(p.Spec.RemediationAction)), state, Message(p))
		if history {
			for _, h := range p.Status.History {
				fmt.Fprintf(tw, "\t\t\t\t  %s  %s\n", h.LastTimestamp.UTC().Format("2006-01-02T15:04:05Z"), h.Message)
			}
		}
	}
	return tw.Flush()
}

// Message joins the templates' messages as "<type> - <message>; ...".
func Message(p policyv1.ConfigurationPolicy) string {
	var parts []string
	for _, d := range p.Status.CompliancyDetails {
		for _, c := range d.Conditions {
			parts = append(parts, c.Type+" - "+c.Message)
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}
