package generator

import (
	"fmt"
	"maps"
	"slices"
)

// The defaults upstream's generator documents for an unset policyDefaults field.
var (
	defaultCategories = []string{"CM Configuration Management"}
	defaultControls   = []string{"CM-2 Baseline Configuration"}
	defaultStandards  = []string{"NIST SP 800-53"}
)

const (
	defaultComplianceType    = "musthave"
	defaultRemediationAction = "inform"
	defaultSeverity          = "low"
	maxNameLength            = 63
)

// Resolve applies policyDefaults to every policy, each policy's options to
// its manifests and policySetDefaults to every policy set, merges the policy
// sets named by policies into policySets, and checks the result. After it,
// every pointer option is set.
func (c *Config) Resolve() error {
	if len(c.Policies) == 0 {
		return c.errorf("policies is empty but it must list at least one policy")
	}
	d := &c.PolicyDefaults
	if d.Categories == nil {
		d.Categories = defaultCategories
	}
	if d.Controls == nil {
		d.Controls = defaultControls
	}
	if d.Standards == nil {
		d.Standards = defaultStandards
	}
	if d.ComplianceType == "" {
		d.ComplianceType = defaultComplianceType
	}
	if d.RemediationAction == "" {
		d.RemediationAction = defaultRemediationAction
	}
	if d.Severity == "" {
		d.Severity = defaultSeverity
	}
	orDefault(&d.CopyPolicyMetadata, true)
	orDefault(&d.InformGatekeeperPolicies, true)
	orDefault(&d.InformKyvernoPolicies, true)
	orDefault(&d.GeneratePolicyPlacement, true)
	orDefault(&d.GeneratePlacementWhenInSet, false)
	orDefault(&d.OrderManifests, false)
	orDefault(&d.ConsolidateManifests, !*d.OrderManifests)
	orDefault(&d.Disabled, false)
	orDefault(&d.IgnorePending, false)
	defaultDependencies(d.Dependencies, d.Namespace)
	defaultDependencies(d.ExtraDependencies, d.Namespace)

	// Policy set membership is the union of policySets[].policies and
	// policies[].policySets.
	members := map[string]map[string]bool{}
	for _, s := range c.PolicySets {
		if members[s.Name] == nil {
			members[s.Name] = map[string]bool{}
		}
		for _, p := range s.Policies {
			members[s.Name][p] = true
		}
	}

	for i := range c.Policies {
		p := &c.Policies[i]
		c.resolvePolicy(p)
		for _, s := range p.PolicySets {
			if members[s] == nil {
				c.PolicySets = append(c.PolicySets, PolicySetConfig{Name: s})
				members[s] = map[string]bool{}
			}
			members[s][p.Name] = true
		}
	}
	for i := range c.Policies {
		p := &c.Policies[i]
		p.PolicySets = nil
		for s, ps := range members {
			if ps[p.Name] {
				p.PolicySets = append(p.PolicySets, s)
			}
		}
		slices.Sort(p.PolicySets)
	}

	orDefault(&c.PolicySetDefaults.GeneratePolicySetPlacement, true)
	for i := range c.PolicySets {
		s := &c.PolicySets[i]
		s.Policies = slices.Sorted(maps.Keys(members[s.Name]))
		orDefault(&s.GeneratePolicySetPlacement, *c.PolicySetDefaults.GeneratePolicySetPlacement)
		inheritPlacement(&s.Placement, c.PolicySetDefaults.Placement)
	}
	return c.validate()
}

// resolvePolicy fills what p leaves unset from policyDefaults, then its
// manifests from p.
func (c *Config) resolvePolicy(p *PolicyConfig) {
	d := &c.PolicyDefaults
	if p.PolicyAnnotations == nil {
		p.PolicyAnnotations = maps.Clone(d.PolicyAnnotations)
	}
	if p.PolicyLabels == nil {
		p.PolicyLabels = maps.Clone(d.PolicyLabels)
	}
	if p.ConfigurationPolicyAnnotations == nil {
		p.ConfigurationPolicyAnnotations = maps.Clone(d.ConfigurationPolicyAnnotations)
	}
	if p.Categories == nil {
		p.Categories = d.Categories
	}
	if p.Controls == nil {
		p.Controls = d.Controls
	}
	if p.Standards == nil {
		p.Standards = d.Standards
	}
	if p.Description == "" {
		p.Description = d.Description
	}
	if p.PolicySets == nil {
		p.PolicySets = d.PolicySets
	}
	if p.HubTemplateOptions.ServiceAccountName == "" {
		p.HubTemplateOptions = d.HubTemplateOptions
	}
	orDefault(&p.CopyPolicyMetadata, *d.CopyPolicyMetadata)
	orDefault(&p.GeneratePolicyPlacement, *d.GeneratePolicyPlacement)
	orDefault(&p.GeneratePlacementWhenInSet, *d.GeneratePlacementWhenInSet)
	orDefault(&p.InformGatekeeperPolicies, *d.InformGatekeeperPolicies)
	orDefault(&p.InformKyvernoPolicies, *d.InformKyvernoPolicies)
	orDefault(&p.OrderManifests, *d.OrderManifests)
	if *p.OrderManifests {
		orDefault(&p.ConsolidateManifests, false)
	} else {
		orDefault(&p.ConsolidateManifests, *d.ConsolidateManifests)
	}
	orDefault(&p.Disabled, *d.Disabled)
	orDefault(&p.IgnorePending, *d.IgnorePending)
	if p.Dependencies != nil {
		defaultDependencies(p.Dependencies, d.Namespace)
	} else {
		p.Dependencies = d.Dependencies
	}
	if p.ExtraDependencies != nil {
		defaultDependencies(p.ExtraDependencies, d.Namespace)
	} else {
		p.ExtraDependencies = d.ExtraDependencies
	}
	inheritPlacement(&p.Placement, d.Placement)
	inheritTemplateOptions(&p.TemplateOptions, d.TemplateOptions)

	for j := range p.Manifests {
		m := &p.Manifests[j]
		inheritTemplateOptions(&m.TemplateOptions, p.TemplateOptions)
		if m.ExtraDependencies != nil {
			defaultDependencies(m.ExtraDependencies, d.Namespace)
		} else {
			m.ExtraDependencies = p.ExtraDependencies
		}
		orDefault(&m.IgnorePending, *p.IgnorePending)
	}
}

// inheritTemplateOptions fills what o leaves unset from parent.
func inheritTemplateOptions(o *TemplateOptions, parent TemplateOptions) {
	for _, f := range []struct {
		v *string
		p string
	}{
		{&o.RemediationAction, parent.RemediationAction},
		{&o.Severity, parent.Severity},
		{&o.ComplianceType, parent.ComplianceType},
		{&o.MetadataComplianceType, parent.MetadataComplianceType},
		{&o.PruneObjectBehavior, parent.PruneObjectBehavior},
		{&o.RecordDiff, parent.RecordDiff},
		{&o.RecreateOption, parent.RecreateOption},
		{&o.GatekeeperEnforcementAction, parent.GatekeeperEnforcementAction},
	} {
		if *f.v == "" {
			*f.v = f.p
		}
	}
	inheritPair(&o.EvaluationInterval, parent.EvaluationInterval)
	inheritPair(&o.CustomMessage, parent.CustomMessage)
	if o.NamespaceSelector.IsUnset() {
		o.NamespaceSelector = parent.NamespaceSelector
	}
	if o.ObjectSelector.IsUnset() {
		o.ObjectSelector = parent.ObjectSelector
	}
}

// inheritPair takes each half of parent that p does not set (an explicit ""
// counts as set).
func inheritPair(p *Pair, parent Pair) {
	if p.Compliant == nil {
		p.Compliant = parent.Compliant
	}
	if p.NonCompliant == nil {
		p.NonCompliant = parent.NonCompliant
	}
}

// inheritPlacement takes the default's placement when p gives none, the
// default's path first, then its placement name, then its selector. The
// placement name (for sharing) is not inherited here: Generate falls back to
// it.
func inheritPlacement(p *PlacementConfig, def PlacementConfig) {
	if !p.isUnset() || def.isUnset() {
		return
	}
	switch {
	case def.PlacementPath != "":
		p.PlacementPath = def.PlacementPath
	case def.PlacementName != "":
		p.PlacementName = def.PlacementName
	default:
		p.LabelSelector = def.selector()
	}
}

func defaultDependencies(deps []Dependency, namespace string) {
	for i := range deps {
		d := &deps[i]
		if d.Kind == "" {
			d.Kind = policyKind
		}
		if d.APIVersion == "" {
			d.APIVersion = policyAPIVersion
		}
		if d.Namespace == "" && d.Kind == policyKind {
			d.Namespace = namespace
		}
		if d.Compliance == "" {
			d.Compliance = "Compliant"
		}
	}
}

func orDefault(b **bool, v bool) {
	if *b == nil {
		*b = &v
	}
}

func (c *Config) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{c.File}, args...)...)
}
