package evaluate

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/configpolicy/compare"
)

// RecordDiffCensored is the effective recordDiff of a template whose kind
// holds sensitive data (or that reads a Secret) when recordDiff is unset:
// the status says the diff is redacted instead of showing it (upstream's
// internal value of the same name).
const RecordDiffCensored policyv1.RecordDiff = "Censored"

// CensoredDiff is what a Censored template records instead of its diff
// (upstream's text).
const CensoredDiff = `# The difference is redacted because it contains sensitive data. To override, the ` +
	`spec["object-templates"][].recordDiff field must be set to "InStatus" for the difference to be recorded ` +
	`in the policy status. Consider existing access to the ConfigurationPolicy objects and the etcd ` +
	`encryption configuration before you proceed with an override.`

// MaxDiffLines is how many diff lines (after the 3 header lines) a recorded
// diff keeps, as upstream.
const MaxDiffLines = 50

// defaultRecordDiff is upstream's default: Censored for ConfigMaps,
// Secrets, OpenShift OAuth tokens and Routes, and for templates that read a
// Secret; InStatus otherwise.
func defaultRecordDiff(gvk schema.GroupVersionKind, sensitive bool) policyv1.RecordDiff {
	switch {
	case sensitive,
		gvk.Group == "" && (gvk.Kind == "ConfigMap" || gvk.Kind == "Secret"),
		gvk.Group == "oauth.openshift.io" && (gvk.Kind == "OAuthAccessToken" || gvk.Kind == "OAuthAuthorizeTokens"),
		gvk.Group == "route.openshift.io" && gvk.Kind == "Route":
		return RecordDiffCensored
	}
	return policyv1.RecordDiffInStatus
}

// DiffOf is the diff the template records for an object from live to
// merged: none for recordDiff None, the redaction notice for Censored, else
// the unified diff (headed "ns/name : existing") cut to MaxDiffLines lines.
func (t *TemplateResult) DiffOf(ns, name string, live, merged map[string]any) string {
	switch t.RecordDiff {
	case policyv1.RecordDiffNone:
		return ""
	case RecordDiffCensored:
		return CensoredDiff
	}
	if ns != "" {
		name = ns + "/" + name
	}
	return TruncateDiff(compare.Diff(name, live, merged))
}

// TruncateDiff keeps the header and the first MaxDiffLines lines of a long
// diff, saying so first, as upstream: "# Truncated: showing 50/N diff lines:".
func TruncateDiff(d string) string {
	if d == "" {
		return d
	}
	lines := strings.Split(d+"\n", "\n") // upstream counts the empty line after the last newline
	if len(lines) <= MaxDiffLines+3 {
		return d
	}
	return fmt.Sprintf("# Truncated: showing %d/%d diff lines:\n%s", MaxDiffLines, len(lines), strings.Join(lines[:MaxDiffLines+3], "\n"))
}
