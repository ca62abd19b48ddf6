package agent

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/gatekeeper"
)

// Gatekeeper objects in policy-templates (ConstraintTemplates and
// constraints) are delivered as they are, cluster-scoped, labelled
// PolicyLabel (they cannot be owned by the namespaced policy copy). Their
// compliance is read from their status, which Gatekeeper's audit writes
// where Gatekeeper is installed and Flotilla's Rego engine (package
// gatekeeper/live, run by the config-policy-controller agent) writes where
// it is not: both write the same fields.

// IsGatekeeper reports whether a template object is a Gatekeeper
// ConstraintTemplate or constraint.
func IsGatekeeper(u *unstructured.Unstructured) bool {
	g := u.GroupVersionKind().Group
	return g == gatekeeper.TemplateGroup || g == gatekeeper.ConstraintGroup
}

// GatekeeperObject is the object to deliver for a Gatekeeper template of
// policy: labelled PolicyLabel, with no namespace, and for a constraint the
// policy's remediationAction mapped as OCM maps it (inform: warn, enforce:
// deny; unset: the constraint's own enforcementAction).
func GatekeeperObject(u *unstructured.Unstructured, policy string, remediation policyv1.RemediationAction) *unstructured.Unstructured {
	out := u.DeepCopy()
	out.SetNamespace("")
	labels := out.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[PolicyLabel] = policy
	out.SetLabels(labels)
	delete(out.Object, "status")
	if out.GroupVersionKind().Group == gatekeeper.ConstraintGroup {
		switch strings.ToLower(string(remediation)) {
		case "inform":
			_ = unstructured.SetNestedField(out.Object, "warn", "spec", "enforcementAction")
		case "enforce":
			_ = unstructured.SetNestedField(out.Object, "deny", "spec", "enforcementAction")
		}
	}
	return out
}

// GatekeeperCompliance is a delivered Gatekeeper object's compliance event
// message from its status, or ok false while nothing has reported on it yet.
//   - ConstraintTemplate: NonCompliant with the errors of status.byPod (Rego
//     that does not compile), Compliant once status.created is true.
//   - constraint: after an audit (status.auditTimestamp or totalViolations),
//     NonCompliant with each listed violation as
//     `<enforcementAction> - <message> (on <Kind> <namespace/name or name>)`
//     joined by "; ", or Compliant with
//     `<enforcementAction> - the Gatekeeper constraint has not detected any active violations`.
func GatekeeperCompliance(obj *unstructured.Unstructured) (state policyv1.ComplianceState, msg string, ok bool) {
	kind, name := obj.GetKind(), obj.GetName()
	if obj.GroupVersionKind().Group == gatekeeper.TemplateGroup {
		var errs []string
		pods, _, _ := unstructured.NestedSlice(obj.Object, "status", "byPod")
		for _, p := range pods {
			pm, _ := p.(map[string]any)
			list, _, _ := unstructured.NestedSlice(pm, "errors")
			for _, e := range list {
				em, _ := e.(map[string]any)
				if m, _ := em["message"].(string); m != "" {
					errs = append(errs, m)
				}
			}
		}
		if len(errs) > 0 {
			sort.Strings(errs)
			return policyv1.NonCompliant, fmt.Sprintf("NonCompliant; violation - %s %s could not be created: %s", kind, name, strings.Join(dedupe(errs), "; ")), true
		}
		if created, _, _ := unstructured.NestedBool(obj.Object, "status", "created"); created {
			return policyv1.Compliant, fmt.Sprintf("Compliant; notification - %s %s was created successfully", kind, name), true
		}
		return "", "", false
	}
	_, audited, _ := unstructured.NestedString(obj.Object, "status", "auditTimestamp")
	total, counted := number(obj.Object, "status", "totalViolations")
	if !audited && !counted {
		return "", "", false
	}
	action, _, _ := unstructured.NestedString(obj.Object, "spec", "enforcementAction")
	if action == "" {
		action = "deny"
	}
	violations, _, _ := unstructured.NestedSlice(obj.Object, "status", "violations")
	if total == 0 && len(violations) == 0 {
		return policyv1.Compliant, fmt.Sprintf("Compliant; notification - %s - the Gatekeeper constraint has not detected any active violations", action), true
	}
	var parts []string
	for _, v := range violations {
		vm, _ := v.(map[string]any)
		a, _ := vm["enforcementAction"].(string)
		if a == "" {
			a = action
		}
		m, _ := vm["message"].(string)
		k, _ := vm["kind"].(string)
		n, _ := vm["name"].(string)
		if ns, _ := vm["namespace"].(string); ns != "" {
			n = ns + "/" + n
		}
		parts = append(parts, fmt.Sprintf("%s - %s (on %s %s)", a, m, k, n))
	}
	if len(parts) == 0 {
		parts = []string{fmt.Sprintf("%s - %d violations", action, total)}
	}
	return policyv1.NonCompliant, "NonCompliant; violation - " + strings.Join(parts, "; "), true
}

// number reads an integer field decoded as int64 (the API) or float64 (YAML).
func number(obj map[string]any, fields ...string) (int64, bool) {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		return int64(n), true
	}
	return 0, false
}

func dedupe(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func servedVersion(crd *unstructured.Unstructured) string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if served, _ := vm["served"].(bool); served {
			if s, _ := vm["storage"].(bool); s {
				return vm["name"].(string)
			}
		}
	}
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if served, _ := vm["served"].(bool); served {
			return vm["name"].(string)
		}
	}
	return ""
}

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// GatekeeperInstalled reports whether Gatekeeper itself serves
// ConstraintTemplates on the cluster: its CRD exists and is not the one
// Flotilla's engine installs.
func GatekeeperInstalled(crd *unstructured.Unstructured) bool {
	return crd != nil && crd.GetLabels()["app.kubernetes.io/managed-by"] != "flotilla-policy"
}
