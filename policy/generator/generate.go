package generator

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The kinds Generate writes.
const (
	policyGroup         = "policy.open-cluster-management.io"
	policyAPIVersion    = policyGroup + "/v1"
	policyKind          = "Policy"
	configPolicyKind    = "ConfigurationPolicy"
	policySetAPIVersion = policyGroup + "/v1beta1"
	policySetKind       = "PolicySet"
	bindingKind         = "PlacementBinding"
	placementGroup      = "cluster.open-cluster-management.io"
	placementAPIVersion = placementGroup + "/v1beta1"
	placementKind       = "Placement"
)

// The annotations a Policy's standards, categories, controls and description
// go to.
const (
	annotationStandards   = policyGroup + "/standards"
	annotationCategories  = policyGroup + "/categories"
	annotationControls    = policyGroup + "/controls"
	annotationDescription = policyGroup + "/description"
	annotationSeverity    = policyGroup + "/severity"
)

// Generate builds the objects a resolved (Resolve) and loaded (Load)
// configuration describes, in upstream's order: the Policies, the
// PolicySets, the Placements, then the PlacementBindings (by placement
// name). It reads no file.
func Generate(c *Config) ([]map[string]any, error) {
	var out []map[string]any
	previous := ""
	for i := range c.Policies {
		p := &c.Policies[i]
		obj, err := c.policy(p, previous)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
		previous = p.Name
	}
	for _, s := range c.PolicySets {
		out = append(out, c.policySet(s))
	}

	pl := newPlacements(c)
	type bound struct{ policies, sets []string }
	binds := map[string]*bound{}
	bind := func(placement string) *bound {
		if binds[placement] == nil {
			binds[placement] = &bound{}
		}
		return binds[placement]
	}
	for i := range c.Policies {
		p := &c.Policies[i]
		if !*p.GeneratePlacementWhenInSet && (!*p.GeneratePolicyPlacement || len(p.PolicySets) > 0) {
			continue
		}
		name, err := pl.placement(c.PolicyDefaults.Placement, p.Placement, p.Name, fmt.Sprintf("policies[%d] (%s).placement", i, p.Name))
		if err != nil {
			return nil, err
		}
		bind(name).policies = append(bind(name).policies, p.Name)
	}
	for i, s := range c.PolicySets {
		if !*s.GeneratePolicySetPlacement {
			continue
		}
		name, err := pl.placement(c.PolicySetDefaults.Placement, s.Placement, s.Name, fmt.Sprintf("policySets[%d] (%s).placement", i, s.Name))
		if err != nil {
			return nil, err
		}
		bind(name).sets = append(bind(name).sets, s.Name)
	}
	out = append(out, pl.objects...)

	shared := 0
	for _, placement := range slices.Sorted(maps.Keys(binds)) {
		b := binds[placement]
		def := c.PlacementBindingDefaults.Name
		var name string
		switch {
		case len(b.policies) == 1 && len(b.sets) == 0:
			name = "binding-" + b.policies[0]
		case len(b.policies) == 0 && len(b.sets) == 1 && def == "":
			name = "binding-" + b.sets[0]
		case def == "":
			return nil, c.errorf("placementBindingDefaults.name must be set: placement %s is shared by policies %v and policy sets %v, and their one PlacementBinding needs a name",
				placement, b.policies, b.sets)
		default:
			shared++
			name = def
			if shared > 1 {
				name = fmt.Sprintf("%s%d", def, shared)
			}
		}
		out = append(out, c.binding(name, placement, b.policies, b.sets))
	}
	return out, nil
}

// policy builds the Policy of p; previous is the policy before it, which it
// depends on under orderPolicies.
func (c *Config) policy(p *PolicyConfig, previous string) (map[string]any, error) {
	templates, err := c.templates(p)
	if err != nil {
		return nil, err
	}
	annotations := map[string]any{}
	for k, v := range p.PolicyAnnotations {
		annotations[k] = v
	}
	annotations[annotationCategories] = strings.Join(p.Categories, ",")
	annotations[annotationControls] = strings.Join(p.Controls, ",")
	annotations[annotationStandards] = strings.Join(p.Standards, ",")
	annotations[annotationDescription] = p.Description

	list := make([]any, len(templates))
	for i, t := range templates {
		list[i] = t
	}
	spec := map[string]any{"disabled": *p.Disabled, "policy-templates": list}
	if sa := p.HubTemplateOptions.ServiceAccountName; sa != "" {
		spec["hubTemplateOptions"] = map[string]any{"serviceAccountName": sa}
	}
	deps := p.Dependencies
	if c.PolicyDefaults.OrderPolicies && previous != "" {
		deps = []Dependency{{Name: previous, Namespace: c.PolicyDefaults.Namespace, Compliance: "Compliant", Kind: policyKind, APIVersion: policyAPIVersion}}
	}
	if len(deps) > 0 {
		spec["dependencies"] = dependencies(deps)
	}
	if !*p.CopyPolicyMetadata {
		spec["copyPolicyMetadata"] = false
	}
	if action := rootRemediationAction(templates); action != "" {
		spec["remediationAction"] = action
	}
	meta := map[string]any{"name": p.Name, "namespace": c.PolicyDefaults.Namespace, "annotations": annotations}
	if len(p.PolicyLabels) > 0 {
		labels := map[string]any{}
		for k, v := range p.PolicyLabels {
			labels[k] = v
		}
		meta["labels"] = labels
	}
	return map[string]any{"apiVersion": policyAPIVersion, "kind": policyKind, "metadata": meta, "spec": spec}, nil
}

// rootRemediationAction is the templates' common remediationAction (informOnly
// reads inform), or "" when they differ.
func rootRemediationAction(templates []map[string]any) string {
	action := ""
	for _, t := range templates {
		def, _ := t["objectDefinition"].(map[string]any)
		spec, _ := def["spec"].(map[string]any)
		a, ok := spec["remediationAction"].(string)
		if !ok {
			continue
		}
		if action == "" {
			action = a
		} else if a != action {
			return ""
		}
	}
	if strings.EqualFold(action, "informonly") {
		return "inform"
	}
	return action
}

func (c *Config) policySet(s PolicySetConfig) map[string]any {
	return map[string]any{
		"apiVersion": policySetAPIVersion, "kind": policySetKind,
		"metadata": map[string]any{"name": s.Name, "namespace": c.PolicyDefaults.Namespace},
		"spec":     map[string]any{"description": s.Description, "policies": strings2any(s.Policies)},
	}
}

func (c *Config) binding(name, placement string, policies, sets []string) map[string]any {
	subjects := []any{}
	for _, p := range policies {
		subjects = append(subjects, map[string]any{"apiGroup": policyGroup, "kind": policyKind, "name": p})
	}
	for _, s := range sets {
		subjects = append(subjects, map[string]any{"apiGroup": policyGroup, "kind": policySetKind, "name": s})
	}
	return map[string]any{
		"apiVersion": policyAPIVersion, "kind": bindingKind,
		"metadata":     map[string]any{"name": name, "namespace": c.PolicyDefaults.Namespace},
		"placementRef": map[string]any{"apiGroup": placementGroup, "kind": placementKind, "name": placement},
		"subjects":     subjects,
	}
}

func dependencies(deps []Dependency) []any {
	out := make([]any, len(deps))
	for i, d := range deps {
		m := map[string]any{"name": d.Name}
		for k, v := range map[string]string{"apiVersion": d.APIVersion, "compliance": d.Compliance, "kind": d.Kind, "namespace": d.Namespace} {
			if v != "" {
				m[k] = v
			}
		}
		out[i] = m
	}
	return out
}

func strings2any(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
