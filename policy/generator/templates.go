package generator

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// templates builds the policy-templates of p from its loaded manifests:
//
//   - a policy-type manifest (an OCM kind ending in Policy, such as
//     ConfigurationPolicy, CertificatePolicy or OperatorPolicy; a Gatekeeper
//     ConstraintTemplate or constraint when informGatekeeperPolicies is false)
//     is a template as it is;
//   - a manifest holding only object-templates-raw becomes a
//     ConfigurationPolicy with that text;
//   - every other object is an object-template of a generated
//     ConfigurationPolicy: one for all of them (consolidateManifests, the
//     default, written after the policy-type templates) or one per object;
//   - Gatekeeper constraints and Kyverno policies add the inform templates
//     that report their violations (informGatekeeperPolicies,
//     informKyvernoPolicies);
//   - orderManifests chains the templates with extraDependencies.
func (c *Config) templates(p *PolicyConfig) ([]map[string]any, error) {
	var templates []map[string]any
	var objectTemplates []any
	consolidated := ""
	counter := map[string]int{}
	next := func(name string) string {
		counter[name]++
		if counter[name] > 1 {
			return fmt.Sprintf("%s%d", name, counter[name])
		}
		return name
	}
	groups := make([][]map[string]any, len(p.Manifests))
	for i := range p.Manifests {
		for _, o := range p.Manifests[i].objects {
			groups[i] = append(groups[i], runtime.DeepCopyJSON(o))
		}
	}

	for i, group := range groups {
		m := &p.Manifests[i]
		name := m.Name
		if name == "" {
			name = p.Name
		}
		for k, obj := range group {
			where := fmt.Sprintf("policy %s, manifest %s (document %d)", p.Name, m.Path, k+1)
			if m.GatekeeperEnforcementAction != "" && strings.HasPrefix(str(obj, "apiVersion"), "constraints.gatekeeper.sh") {
				spec, _ := obj["spec"].(map[string]any)
				if spec == nil {
					spec = map[string]any{}
					obj["spec"] = spec
				}
				spec["enforcementAction"] = m.GatekeeperEnforcementAction
			}
			kind, err := classify(obj, *p.InformGatekeeperPolicies)
			if err != nil {
				return nil, c.errorf("%s: %v", where, err)
			}
			switch kind {
			case rawTemplates:
				t := c.configPolicy(p, obj["object-templates-raw"], m.TemplateOptions, next(name))
				setTemplateOptions(t, *m.IgnorePending, m.ExtraDependencies)
				templates = append(templates, t)
				continue
			case ocmPolicy:
				if meta, ok := obj["metadata"].(map[string]any); ok {
					delete(meta, "namespace") // a template is namespaced by its policy
				}
				t := map[string]any{"objectDefinition": obj}
				setTemplateOptions(t, *m.IgnorePending, m.ExtraDependencies)
				templates = append(templates, t)
				continue
			case gatekeeperObject:
				meta, _ := obj["metadata"].(map[string]any)
				annotations, _ := meta["annotations"].(map[string]any)
				if annotations == nil {
					annotations = map[string]any{}
					meta["annotations"] = annotations
				}
				annotations[annotationSeverity] = p.Severity
				templates = append(templates, map[string]any{"objectDefinition": obj})
				continue
			}
			ot := objectTemplate(obj, m.TemplateOptions)
			if *p.ConsolidateManifests {
				if consolidated == "" {
					consolidated = m.Name
				}
				objectTemplates = append(objectTemplates, ot)
				continue
			}
			t := c.configPolicy(p, []any{ot}, m.TemplateOptions, next(name))
			setTemplateOptions(t, *m.IgnorePending, m.ExtraDependencies)
			templates = append(templates, t)
		}
	}
	if len(templates) == 0 && len(objectTemplates) == 0 {
		return nil, c.errorf("policy %s: its manifests hold no object (every manifest file is empty)", p.Name)
	}
	if len(objectTemplates) > 0 {
		if consolidated == "" {
			consolidated = p.Name
		}
		t := c.configPolicy(p, objectTemplates, p.TemplateOptions, next(consolidated))
		setTemplateOptions(t, *p.IgnorePending, p.ExtraDependencies)
		templates = append(templates, t)
	}
	for _, x := range expanders {
		if !x.enabled(p) {
			continue
		}
		for i, group := range groups {
			m := &p.Manifests[i]
			for _, obj := range group {
				for _, t := range x.expand(obj, p.Severity) {
					setTemplateOptions(t, *m.IgnorePending, m.ExtraDependencies)
					templates = append(templates, t)
				}
			}
		}
	}
	if *p.OrderManifests {
		var previous map[string]any
		for _, t := range templates {
			if previous != nil {
				t["extraDependencies"] = []any{previous}
			}
			def, _ := t["objectDefinition"].(map[string]any)
			meta, _ := def["metadata"].(map[string]any)
			previous = map[string]any{"apiVersion": def["apiVersion"], "kind": def["kind"], "name": meta["name"], "compliance": "Compliant"}
		}
	}
	return templates, nil
}

type manifestKind int

const (
	plainObject      manifestKind = iota // wrapped in a ConfigurationPolicy
	rawTemplates                         // object-templates-raw
	ocmPolicy                            // a policy template kind of OCM
	gatekeeperObject                     // a Gatekeeper object taken as it is
)

// classify says how a manifest becomes part of a policy.
func classify(obj map[string]any, informGatekeeper bool) (manifestKind, error) {
	if _, ok := obj["object-templates-raw"].(string); ok {
		return rawTemplates, nil
	}
	apiVersion, kind := str(obj, "apiVersion"), str(obj, "kind")
	if apiVersion == "" {
		return 0, fmt.Errorf("apiVersion is missing or not a string")
	}
	if kind == "" {
		return 0, fmt.Errorf("kind is missing or not a string")
	}
	isOCM := strings.HasPrefix(apiVersion, policyGroup)
	if isOCM && kind == policyKind {
		return 0, fmt.Errorf("a root Policy cannot be a manifest: apply it to the hub as it is")
	}
	isGatekeeper := (strings.HasPrefix(apiVersion, "templates.gatekeeper.sh") && kind == "ConstraintTemplate") ||
		strings.HasPrefix(apiVersion, "constraints.gatekeeper.sh")
	result := plainObject
	switch {
	case isOCM && strings.HasSuffix(kind, "Policy"):
		result = ocmPolicy
	case isGatekeeper && !informGatekeeper:
		result = gatekeeperObject
	default:
		return plainObject, nil
	}
	meta, _ := obj["metadata"].(map[string]any)
	if name, _ := meta["name"].(string); name == "" {
		return 0, fmt.Errorf("%s %s has no metadata.name", kind, apiVersion)
	}
	return result, nil
}

// objectTemplate wraps obj in an object-template with the manifest's
// options.
func objectTemplate(obj map[string]any, o TemplateOptions) map[string]any {
	ot := map[string]any{"complianceType": o.ComplianceType, "objectDefinition": obj}
	if o.MetadataComplianceType != "" {
		ot["metadataComplianceType"] = o.MetadataComplianceType
	}
	if !o.ObjectSelector.IsUnset() {
		ot["objectSelector"] = selectorMap(o.ObjectSelector)
	}
	if o.RecreateOption != "" {
		ot["recreateOption"] = o.RecreateOption
	}
	if o.RecordDiff != "" {
		ot["recordDiff"] = o.RecordDiff
	}
	return ot
}

// configPolicy is a ConfigurationPolicy template named name holding
// objectTemplates (a list, or the object-templates-raw text), with p's
// options and then o's on top.
func (c *Config) configPolicy(p *PolicyConfig, objectTemplates any, o TemplateOptions, name string) map[string]any {
	spec := map[string]any{"remediationAction": p.RemediationAction, "severity": p.Severity}
	if raw, ok := objectTemplates.(string); ok {
		spec["object-templates-raw"] = raw
	} else {
		spec["object-templates"] = objectTemplates
	}
	meta := map[string]any{"name": name}
	if len(p.ConfigurationPolicyAnnotations) > 0 {
		annotations := map[string]any{}
		for k, v := range p.ConfigurationPolicyAnnotations {
			annotations[k] = v
		}
		meta["annotations"] = annotations
	}
	for _, sel := range []NamespaceSelector{p.NamespaceSelector, o.NamespaceSelector} {
		if !sel.IsUnset() {
			spec["namespaceSelector"] = namespaceSelectorMap(sel)
		}
	}
	if pair := pairMap(o.EvaluationInterval); pair != nil {
		spec["evaluationInterval"] = pair
	}
	if pair := pairMap(o.CustomMessage); pair != nil {
		spec["customMessage"] = pair
	}
	if o.PruneObjectBehavior != "" {
		spec["pruneObjectBehavior"] = o.PruneObjectBehavior
	}
	if o.RemediationAction != "" {
		spec["remediationAction"] = o.RemediationAction
	}
	if o.Severity != "" {
		spec["severity"] = o.Severity
	}
	return map[string]any{"objectDefinition": map[string]any{
		"apiVersion": policyAPIVersion, "kind": configPolicyKind, "metadata": meta, "spec": spec}}
}

// setTemplateOptions adds a template's ignorePending and extraDependencies.
func setTemplateOptions(t map[string]any, ignorePending bool, deps []Dependency) {
	if ignorePending {
		t["ignorePending"] = true
	}
	if len(deps) > 0 {
		t["extraDependencies"] = dependencies(deps)
	}
}

// pairMap is the set, non-empty halves of an evaluationInterval or
// customMessage, or nil.
func pairMap(p Pair) map[string]any {
	m := map[string]any{}
	if p.Compliant != nil && *p.Compliant != "" {
		m["compliant"] = *p.Compliant
	}
	if p.NonCompliant != nil && *p.NonCompliant != "" {
		m["noncompliant"] = *p.NonCompliant
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

func namespaceSelectorMap(s NamespaceSelector) map[string]any {
	m := selectorMap(s.LabelSelector)
	if len(s.Include) > 0 {
		m["include"] = strings2any(s.Include)
	}
	if len(s.Exclude) > 0 {
		m["exclude"] = strings2any(s.Exclude)
	}
	return m
}

// selectorMap writes a label selector's given parts; a requirement always
// has its values list, as upstream writes it.
func selectorMap(s LabelSelector) map[string]any {
	m := map[string]any{}
	if s.MatchLabels != nil {
		labels := map[string]any{}
		for k, v := range *s.MatchLabels {
			labels[k] = v
		}
		m["matchLabels"] = labels
	}
	if s.MatchExpressions != nil {
		exprs := []any{}
		for _, r := range *s.MatchExpressions {
			exprs = append(exprs, map[string]any{"key": r.Key, "operator": string(r.Operator), "values": strings2any(r.Values)})
		}
		m["matchExpressions"] = exprs
	}
	return m
}

func str(obj map[string]any, key string) string {
	s, _ := obj[key].(string)
	return s
}
