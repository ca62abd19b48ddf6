package generator

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

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
