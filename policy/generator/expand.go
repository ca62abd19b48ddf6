package generator

// An expander adds inform templates that report the violations of a policy
// engine other than OCM's, from the engine's own objects: Gatekeeper's
// constraint status and admission events, Kyverno's policy reports.
type expander struct {
	enabled func(p *PolicyConfig) bool
	expand  func(obj map[string]any, severity string) []map[string]any
}

// expanders run in this order (Gatekeeper, then Kyverno), each over every
// manifest of the policy.
var expanders = []expander{
	{enabled: func(p *PolicyConfig) bool { return *p.InformGatekeeperPolicies }, expand: gatekeeperInform},
	{enabled: func(p *PolicyConfig) bool { return *p.InformKyvernoPolicies }, expand: kyvernoInform},
}

const gatekeeperConstraintAPIVersion = "constraints.gatekeeper.sh/v1beta1"

// allNamespaces is the namespaceSelector of the inform templates: every
// namespace but the kube-* ones.
func allNamespaces() map[string]any {
	return map[string]any{"exclude": []any{"kube-*"}, "include": []any{"*"}}
}

func informPolicy(name, severity string, objectTemplates ...any) map[string]any {
	return map[string]any{"objectDefinition": map[string]any{
		"apiVersion": policyAPIVersion, "kind": configPolicyKind,
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"namespaceSelector": allNamespaces(), "remediationAction": "inform", "severity": severity,
			"object-templates": objectTemplates,
		},
	}}
}

// gatekeeperInform: for a constraint, one template that wants no audit
// violation in its status and one that wants no admission-denial event.
func gatekeeperInform(obj map[string]any, severity string) []map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	kind := str(obj, "kind")
	if str(obj, "apiVersion") != gatekeeperConstraintAPIVersion || kind == "" || name == "" {
		return nil
	}
	audit := informPolicy("inform-gatekeeper-audit-"+name, severity, map[string]any{
		"complianceType": "musthave",
		"objectDefinition": map[string]any{
			"apiVersion": gatekeeperConstraintAPIVersion, "kind": kind,
			"metadata": map[string]any{"name": name},
			"status":   map[string]any{"totalViolations": int64(0)},
		},
	})
	admission := informPolicy("inform-gatekeeper-admission-"+name, severity, map[string]any{
		"complianceType": "mustnothave",
		"objectDefinition": map[string]any{
			"apiVersion": "v1", "kind": "Event",
			"annotations": map[string]any{
				"constraint_action": "deny", "constraint_kind": kind, "constraint_name": name, "event_type": "violation",
			},
		},
	})
	return []map[string]any{audit, admission}
}

// kyvernoKinds are the Kyverno policy kinds by apiVersion.
var kyvernoKinds = map[string]map[string]bool{
	"kyverno.io/v1": {"ClusterPolicy": true, "Policy": true},
	"policies.kyverno.io/v1": {
		"ValidatingPolicy": true, "MutatingPolicy": true, "GeneratingPolicy": true, "ImageValidatingPolicy": true,
		"NamespacedValidatingPolicy": true, "NamespacedMutatingPolicy": true, "NamespacedGeneratingPolicy": true,
		"NamespacedImageValidatingPolicy": true,
	},
}

// kyvernoInform: for a Kyverno policy, one template that wants no failed
// result of it in any cluster or namespaced policy report.
func kyvernoInform(obj map[string]any, severity string) []map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if !kyvernoKinds[str(obj, "apiVersion")][str(obj, "kind")] || name == "" {
		return nil
	}
	report := func(kind string) map[string]any {
		return map[string]any{
			"complianceType": "mustnothave",
			"objectDefinition": map[string]any{
				"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": kind,
				"results": []any{map[string]any{"policy": name, "result": "fail"}},
			},
		}
	}
	return []map[string]any{informPolicy("inform-kyverno-"+name, severity, report("ClusterPolicyReport"), report("PolicyReport"))}
}
