package dryrun

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"flotilla.dev/flotilla/policy/gatekeeper"
)

// Formats Print understands.
const (
	FormatText = "text"
	FormatYAML = "yaml"
	FormatJSON = "json"
)

// Print writes the report in format (text, yaml or json).
func Print(w io.Writer, rep *Report, format string) error {
	switch format {
	case "", FormatText, "table":
		return PrintText(w, rep)
	case FormatYAML:
		out, err := yaml.Marshal(rep)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return fmt.Errorf("unknown output format %q: use text, yaml or json", format)
}

// PrintText writes the report for people: per policy its compliance, each
// template's message, the related objects and what enforce would do.
func PrintText(w io.Writer, rep *Report) error {
	p := &printer{w: w}
	for _, warning := range rep.Warnings {
		p.line(0, "warning: %s", warning)
	}
	for i, pr := range rep.Policies {
		if i > 0 {
			p.line(0, "")
		}
		name := pr.Name
		if pr.Namespace != "" {
			name = pr.Namespace + "/" + pr.Name
		}
		p.line(0, "ConfigurationPolicy %s (%s): %s", name, strings.ToLower(string(pr.RemediationAction)), pr.Status.ComplianceState)
		p.line(1, "message: %s", pr.Message)
		for j, t := range pr.result.Templates {
			head := fmt.Sprintf("object-templates[%d]", t.Index)
			if t.Kind != "" {
				target := t.Name
				switch {
				case t.Selected():
					target = "(objectSelector)"
				case t.Unnamed:
					target = "(every name)"
				}
				head += fmt.Sprintf(" %s %s %s", t.ComplianceType, t.Kind, target)
			}
			p.line(1, "%s: %s", head, pr.Status.CompliancyDetails[j].ComplianceState)
			c := pr.Status.CompliancyDetails[j].Conditions[0]
			p.line(2, "%s - %s", c.Type, c.Message)
			if t.Unnamed && !t.Selected() && c.Type == "violation" && t.ComplianceType != "" {
				p.line(2, "note: a template without metadata.name is inform only; enforce does not create, update or delete for it")
			}
			for _, f := range t.Findings {
				if f.StatusOnly {
					p.line(2, "note: only status differs on %s; enforce never changes status", f.Name)
				}
			}
		}
		if pr.Dropped != "" {
			p.line(1, "note: %s", pr.Dropped)
		}
		if len(pr.Status.RelatedObjects) > 0 {
			p.line(1, "related objects:")
			for _, ro := range pr.Status.RelatedObjects {
				id := ro.Object.Metadata.Name
				if ro.Object.Metadata.Namespace != "" {
					id = ro.Object.Metadata.Namespace + "/" + id
				}
				p.line(2, "%-12s %s %s %s: %s", ro.Compliant, ro.Object.APIVersion, ro.Object.Kind, id, ro.Reason)
			}
		}
		if len(pr.Actions) == 0 {
			p.line(1, "enforce would change nothing")
			continue
		}
		p.line(1, "enforce would:")
		for _, a := range pr.Actions {
			id := a.Name
			if a.Namespace != "" {
				id = a.Namespace + "/" + a.Name
			}
			head := fmt.Sprintf("%s %s %s %s", a.Verb, a.APIVersion, a.Kind, id)
			if len(a.Mismatches) > 0 {
				head += " (" + strings.Join(a.Mismatches, ", ") + ")"
			}
			p.line(2, "%s", head)
			switch {
			case a.Object != nil:
				out, err := yaml.Marshal(redact(a.Object))
				if err != nil {
					return err
				}
				p.block(3, string(out))
			case a.Diff != "":
				p.block(3, a.Diff)
			}
		}
	}
	for i, c := range rep.Certificates {
		if i > 0 || len(rep.Policies) > 0 {
			p.line(0, "")
		}
		name := c.Name
		if c.Namespace != "" {
			name = c.Namespace + "/" + c.Name
		}
		p.line(0, "CertificatePolicy %s: %s", name, c.Status.ComplianceState)
		for i, l := range strings.Split(strings.TrimRight(c.Message, "\n"), "\n") {
			if i == 0 {
				p.line(1, "message: %s", l)
			} else {
				p.line(2, "%s", strings.TrimSpace(l))
			}
		}
		namespaces := make([]string, 0, len(c.Status.CompliancyDetails))
		for ns := range c.Status.CompliancyDetails {
			namespaces = append(namespaces, ns)
		}
		sort.Strings(namespaces)
		for _, ns := range namespaces {
			for _, l := range strings.Split(strings.TrimRight(c.Status.CompliancyDetails[ns].Message, "\n"), "\n") {
				p.line(1, "%s", l)
			}
		}
	}
	for i, c := range rep.Constraints {
		if i > 0 || len(rep.Policies)+len(rep.Certificates) > 0 {
			p.line(0, "")
		}
		head := c.Name
		if c.EnforcementAction != "" {
			head += fmt.Sprintf(" (%s)", c.EnforcementAction)
		}
		p.line(0, "Gatekeeper %s: %s", head, c.ComplianceState)
		if len(c.Violations) == 0 {
			p.line(1, "%s", c.Message)
			continue
		}
		noun := "violations"
		if c.EnforcementAction != gatekeeper.ActionDeny {
			noun = "warnings"
		}
		p.line(1, "%s (%d in %d matching objects):", noun, len(c.Violations), c.Audited)
		for _, v := range c.Violations {
			p.line(2, "%s %s: %s", v.Object.APIVersion, v.Object, v.Message)
		}
	}
	return p.err
}

// redact hides a Secret's values.
func redact(obj map[string]any) map[string]any {
	if obj["kind"] != "Secret" {
		return obj
	}
	c := runtime.DeepCopyJSON(obj)
	for _, f := range []string{"data", "stringData"} {
		if m, ok := c[f].(map[string]any); ok {
			for k := range m {
				m[k] = "(redacted)"
			}
		}
	}
	return c
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(indent int, format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, "%s%s\n", strings.Repeat("  ", indent), fmt.Sprintf(format, args...))
}

func (p *printer) block(indent int, text string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		p.line(indent, "| %s", l)
	}
}
