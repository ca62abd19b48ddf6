package generator

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
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

// validate checks a resolved configuration; every message names the field
// and, through errorf, the file.
func (c *Config) validate() error {
	d := &c.PolicyDefaults
	if d.Namespace == "" {
		return c.errorf("policyDefaults.namespace is empty but it must be set")
	}
	if err := c.validatePlacement(d.Placement, "policyDefaults.placement"); err != nil {
		return err
	}
	if n := c.PlacementBindingDefaults.Name; n != "" && !isDNSName(n) {
		return c.errorf("placementBindingDefaults.name %q is not a valid object name (a DNS subdomain)", n)
	}
	if d.OrderPolicies && len(d.Dependencies) > 0 {
		return c.errorf("policyDefaults may set only one of dependencies and orderPolicies")
	}
	if *d.OrderManifests && *d.ConsolidateManifests {
		return c.errorf("policyDefaults may set only one of consolidateManifests and orderManifests")
	}
	if *d.OrderManifests && len(d.ExtraDependencies) > 0 {
		return c.errorf("policyDefaults may set only one of extraDependencies and orderManifests")
	}
	if err := checkDependencies(d.Dependencies, "policyDefaults.dependencies"); err != nil {
		return c.errorf("%v", err)
	}
	if err := checkDependencies(d.ExtraDependencies, "policyDefaults.extraDependencies"); err != nil {
		return c.errorf("%v", err)
	}
	if err := c.validateTemplateOptions(d.TemplateOptions, "policyDefaults"); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i := range c.Policies {
		p := &c.Policies[i]
		where := fmt.Sprintf("policies[%d]", i)
		if p.Name == "" {
			return c.errorf("%s.name is empty but every policy needs a name", where)
		}
		where = fmt.Sprintf("policies[%d] (%s)", i, p.Name)
		if !isDNSName(p.Name) {
			return c.errorf("%s: name %q is not a valid object name (a DNS subdomain)", where, p.Name)
		}
		if seen[p.Name] {
			return c.errorf("%s: a second policy with the name %q", where, p.Name)
		}
		seen[p.Name] = true
		if len(d.Namespace)+1+len(p.Name) > maxNameLength {
			return c.errorf("%s: the namespace and name %s.%s are longer than %d characters (the name of the policy's replicas)",
				where, d.Namespace, p.Name, maxNameLength)
		}
		if len(p.Manifests) == 0 {
			return c.errorf("%s.manifests is empty but every policy needs at least one manifest", where)
		}
		if d.OrderPolicies && len(p.Dependencies) > 0 {
			return c.errorf("%s.dependencies may not be set when policyDefaults.orderPolicies is true", where)
		}
		if *p.ConsolidateManifests && *p.OrderManifests {
			return c.errorf("%s may not set orderManifests when consolidateManifests is true", where)
		}
		if *p.OrderManifests && len(p.ExtraDependencies) > 0 {
			return c.errorf("%s may not set extraDependencies when orderManifests is true", where)
		}
		if err := checkDependencies(p.Dependencies, where+".dependencies"); err != nil {
			return c.errorf("%v", err)
		}
		if err := checkDependencies(p.ExtraDependencies, where+".extraDependencies"); err != nil {
			return c.errorf("%v", err)
		}
		if err := c.validateTemplateOptions(p.TemplateOptions, where); err != nil {
			return err
		}
		for j := range p.Manifests {
			if err := c.validateManifest(p, j, fmt.Sprintf("%s.manifests[%d]", where, j)); err != nil {
				return err
			}
		}
		if err := c.validatePlacement(p.Placement, where+".placement"); err != nil {
			return err
		}
	}
	if err := c.validatePlacement(c.PolicySetDefaults.Placement, "policySetDefaults.placement"); err != nil {
		return err
	}
	seenSet := map[string]bool{}
	for i, s := range c.PolicySets {
		where := fmt.Sprintf("policySets[%d]", i)
		if s.Name == "" {
			return c.errorf("%s.name is empty but every policy set needs a name", where)
		}
		where = fmt.Sprintf("policySets[%d] (%s)", i, s.Name)
		if !isDNSName(s.Name) {
			return c.errorf("%s: name %q is not a valid object name (a DNS subdomain)", where, s.Name)
		}
		if seenSet[s.Name] {
			return c.errorf("%s: a second policy set with the name %q", where, s.Name)
		}
		seenSet[s.Name] = true
		for _, p := range s.Policies {
			if !seen[p] {
				return c.errorf("%s lists policy %q, which this configuration does not generate", where, p)
			}
		}
		if err := c.validatePlacement(s.Placement, where+".placement"); err != nil {
			return err
		}
	}
	return nil
}

// validateManifest checks manifest j of p; with consolidateManifests the
// options that belong to the one ConfigurationPolicy may not differ per
// manifest.
func (c *Config) validateManifest(p *PolicyConfig, j int, where string) error {
	m := &p.Manifests[j]
	if m.Path == "" {
		return c.errorf("%s.path is empty but every manifest needs a path", where)
	}
	if err := c.validateTemplateOptions(m.TemplateOptions, where); err != nil {
		return err
	}
	if *p.OrderManifests && len(m.ExtraDependencies) > 0 {
		return c.errorf("%s may not set extraDependencies when orderManifests is true", where)
	}
	if err := checkDependencies(m.ExtraDependencies, where+".extraDependencies"); err != nil {
		return c.errorf("%v", err)
	}
	if !*p.ConsolidateManifests {
		return nil
	}
	mo, po := m.TemplateOptions, p.TemplateOptions
	for _, f := range []struct {
		name string
		same bool
	}{
		{"evaluationInterval", samePair(mo.EvaluationInterval, po.EvaluationInterval)},
		{"customMessage", samePair(mo.CustomMessage, po.CustomMessage)},
		{"namespaceSelector", reflect.DeepEqual(mo.NamespaceSelector, po.NamespaceSelector)},
		{"pruneObjectBehavior", mo.PruneObjectBehavior == po.PruneObjectBehavior},
		{"remediationAction", mo.RemediationAction == po.RemediationAction},
		{"severity", mo.Severity == po.Severity},
		{"extraDependencies", sameDependencies(m.ExtraDependencies, p.ExtraDependencies)},
		{"ignorePending", *m.IgnorePending == *p.IgnorePending},
	} {
		if !f.same {
			return c.errorf("%s sets %s, which must be set on the policy when consolidateManifests is true (one ConfigurationPolicy holds every manifest)", where, f.name)
		}
	}
	return nil
}

// validateTemplateOptions checks the values of the options with a fixed set
// of values or a format.
func (c *Config) validateTemplateOptions(o TemplateOptions, where string) error {
	for _, f := range []struct {
		name, value string
		allowed     []string
	}{
		{"remediationAction", o.RemediationAction, []string{"inform", "enforce", "informonly"}},
		{"severity", o.Severity, []string{"low", "medium", "high", "critical"}},
		{"complianceType", o.ComplianceType, []string{"musthave", "mustonlyhave", "mustnothave"}},
		{"metadataComplianceType", o.MetadataComplianceType, []string{"musthave", "mustonlyhave"}},
		{"pruneObjectBehavior", o.PruneObjectBehavior, []string{"DeleteAll", "DeleteIfCreated", "None"}},
		{"recordDiff", o.RecordDiff, []string{"InStatus", "Log", "None"}},
		{"recreateOption", o.RecreateOption, []string{"None", "IfRequired", "Always"}},
	} {
		if f.value == "" || slices.ContainsFunc(f.allowed, func(a string) bool { return strings.EqualFold(a, f.value) }) {
			continue
		}
		return c.errorf("%s.%s is %q; it must be one of %v", where, f.name, f.value, f.allowed)
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"compliant", o.EvaluationInterval.Compliant}, {"noncompliant", o.EvaluationInterval.NonCompliant}} {
		if f.v == nil || *f.v == "" || *f.v == "never" || *f.v == "watch" {
			continue
		}
		if _, err := time.ParseDuration(*f.v); err != nil {
			return c.errorf("%s.evaluationInterval.%s is %q: not a duration (like 10m or 1h30m), never or watch", where, f.name, *f.v)
		}
	}
	return nil
}

// validatePlacement checks that a placement gives at most one way to find
// clusters, with valid names and selector.
func (c *Config) validatePlacement(p PlacementConfig, where string) error {
	ways := 0
	for _, set := range []bool{len(p.LabelSelector) > 0, len(p.ClusterSelectors) > 0, len(p.ClusterSelector) > 0, p.PlacementPath != "", p.PlacementName != ""} {
		if set {
			ways++
		}
	}
	if ways > 1 {
		return c.errorf("%s must set only one of labelSelector (or clusterSelectors), placementPath and placementName", where)
	}
	if p.PlacementName != "" && !isDNSName(p.PlacementName) {
		return c.errorf("%s.placementName %q is not a valid object name (a DNS subdomain)", where, p.PlacementName)
	}
	if p.Name != "" && !isDNSName(p.Name) {
		return c.errorf("%s.name %q is not a valid object name (a DNS subdomain)", where, p.Name)
	}
	if sel := p.selector(); len(sel) > 0 {
		if _, err := labelSelector(sel); err != nil {
			return c.errorf("%s.labelSelector: %v", where, err)
		}
	}
	return nil
}

func checkDependencies(deps []Dependency, where string) error {
	for i, d := range deps {
		if d.Name == "" {
			return fmt.Errorf("%s[%d].name is empty but every dependency needs a name", where, i)
		}
	}
	return nil
}

func isDNSName(s string) bool { return len(validation.IsDNS1123Subdomain(s)) == 0 }

func samePair(a, b Pair) bool {
	return ptrEqual(a.Compliant, b.Compliant) && ptrEqual(a.NonCompliant, b.NonCompliant)
}

func ptrEqual(a, b *string) bool {
	if a == nil || b == nil {
		return a == b || (a == nil && *b == "") || (b == nil && *a == "")
	}
	return *a == *b
}

func sameDependencies(a, b []Dependency) bool { return slices.Equal(a, b) }
