package gatekeeper

import (
	"encoding/json"

	"fmt"
	"github.com/open-policy-agent/opa/v1/ast"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

var jsonUnmarshal = json.Unmarshal

// Enforcement actions of a constraint.
const (
	ActionDeny   = "deny"
	ActionWarn   = "warn"
	ActionDryrun = "dryrun"
)

// Constraint is a parsed Gatekeeper constraint.
type Constraint struct {
	// Kind and Name identify it (kind = its template's constraint kind).
	Kind, Name string
	// Action is spec.enforcementAction (default deny). Only deny makes a
	// violation NonCompliant; warn and dryrun report warnings.
	Action string
	// Match selects the objects it is about.
	Match Match
	// Parameters is spec.parameters (input.parameters).
	Parameters map[string]any

	params *ast.Term
}

// ID is "Kind/name".
func (c *Constraint) ID() string { return c.Kind + "/" + c.Name }

// Match is a constraint's spec.match.
type Match struct {
	// Kinds: an object matches when one entry names its group and kind
	// ("*" or an empty list: any). No entries: every kind.
	Kinds []KindMatch
	// Namespaces and ExcludedNamespaces are names with an optional "*" at
	// the front or the end.
	Namespaces, ExcludedNamespaces []string
	// LabelSelector selects by the object's labels; NamespaceSelector by its
	// namespace's labels (a Namespace's own labels). Nil: everything.
	LabelSelector, NamespaceSelector labels.Selector
	// Scope is "*" (or empty), "Cluster" or "Namespaced".
	Scope string
	// Name is the object's name, with an optional "*" at the front or end.
	Name string
}

// KindMatch is one entry of match.kinds.
type KindMatch struct {
	APIGroups, Kinds []string
}

// ParseConstraint reads a constraint object. Errors name the field.
func ParseConstraint(obj *unstructured.Unstructured) (*Constraint, error) {
	c := &Constraint{Kind: obj.GetKind(), Name: obj.GetName(), Action: ActionDeny}
	fail := func(format string, args ...any) (*Constraint, error) {
		return nil, fmt.Errorf("constraint %s: %s", c.ID(), fmt.Sprintf(format, args...))
	}
	spec, _ := obj.Object["spec"].(map[string]any)
	if a, ok := spec["enforcementAction"]; ok {
		s, _ := a.(string)
		switch strings.ToLower(s) {
		case ActionDeny, ActionWarn, ActionDryrun:
			c.Action = strings.ToLower(s)
		case "scoped":
			return fail("enforcementAction scoped (per enforcement point) is not supported; use deny, warn or dryrun")
		default:
			return fail("spec.enforcementAction %v is not deny, warn or dryrun", a)
		}
	}
	if p, ok := spec["parameters"]; ok && p != nil {
		m, ok := p.(map[string]any)
		if !ok {
			return fail("spec.parameters is not an object")
		}
		c.Parameters = m
	}
	m, _ := spec["match"].(map[string]any)
	if spec["match"] != nil && m == nil {
		return fail("spec.match is not an object")
	}
	var err error
	if c.Match, err = parseMatch(m); err != nil {
		return fail("spec.match.%v", err)
	}
	return c, nil
}

func parseMatch(m map[string]any) (Match, error) {
	var out Match
	kinds, _, err := unstructured.NestedSlice(m, "kinds")
	if err != nil {
		return out, fmt.Errorf("kinds: %w", err)
	}
	for i, k := range kinds {
		km, ok := k.(map[string]any)
		if !ok {
			return out, fmt.Errorf("kinds[%d] is not an object", i)
		}
		g, _, err1 := unstructured.NestedStringSlice(km, "apiGroups")
		ks, _, err2 := unstructured.NestedStringSlice(km, "kinds")
		if err1 != nil || err2 != nil {
			return out, fmt.Errorf("kinds[%d]: apiGroups and kinds must be lists of strings", i)
		}
		out.Kinds = append(out.Kinds, KindMatch{APIGroups: g, Kinds: ks})
	}
	for _, f := range []struct {
		name string
		dst  *[]string
	}{{"namespaces", &out.Namespaces}, {"excludedNamespaces", &out.ExcludedNamespaces}} {
		v, _, err := unstructured.NestedStringSlice(m, f.name)
		if err != nil {
			return out, fmt.Errorf("%s must be a list of strings", f.name)
		}
		for i, p := range v {
			if strings.Contains(strings.Trim(p, "*"), "*") {
				return out, fmt.Errorf("%s[%d] %q: a glob may have \"*\" only at its front or end", f.name, i, p)
			}
		}
		*f.dst = v
	}
	for _, f := range []struct {
		name string
		dst  *labels.Selector
	}{{"labelSelector", &out.LabelSelector}, {"namespaceSelector", &out.NamespaceSelector}} {
		raw, ok := m[f.name]
		if !ok || raw == nil {
			continue
		}
		var ls metav1.LabelSelector
		data, _ := json.Marshal(raw)
		if err := json.Unmarshal(data, &ls); err != nil {
			return out, fmt.Errorf("%s: %v", f.name, err)
		}
		s, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return out, fmt.Errorf("%s: %v", f.name, err)
		}
		*f.dst = s
	}
	scope, _, _ := unstructured.NestedString(m, "scope")
	switch scope {
	case "", "*", "Cluster", "Namespaced":
		out.Scope = scope
	default:
		return out, fmt.Errorf("scope %q is not *, Cluster or Namespaced", scope)
	}
	out.Name, _, _ = unstructured.NestedString(m, "name")
	return out, nil
}

// Target is what Match needs to know of an object.
type Target struct {
	Group, Kind, Name, Namespace string
	Labels                       map[string]string
	// NamespaceLabels are the labels of its namespace (of itself for a
	// Namespace); nil when the namespace is unknown.
	NamespaceLabels map[string]string
}

// Matches reports whether the match selects t. Namespace criteria
// (namespaces, excludedNamespaces, namespaceSelector) apply to namespaced
// objects and to Namespaces (by their own name and labels); other
// cluster-scoped objects pass them, as in Gatekeeper. An object whose
// namespace is unknown fails a namespaceSelector.
func (m *Match) Matches(t Target) bool {
	if !m.kindMatches(t.Group, t.Kind) {
		return false
	}
	switch m.Scope {
	case "Cluster":
		if t.Namespace != "" {
			return false
		}
	case "Namespaced":
		if t.Namespace == "" {
			return false
		}
	}
	if m.Name != "" && !globMatch(m.Name, t.Name) {
		return false
	}
	if m.LabelSelector != nil && !m.LabelSelector.Matches(labels.Set(t.Labels)) {
		return false
	}
	ns := t.Namespace
	if ns == "" && t.Group == "" && t.Kind == "Namespace" {
		ns = t.Name
	}
	if ns == "" {
		return true
	}
	if len(m.Namespaces) > 0 && !anyGlob(m.Namespaces, ns) {
		return false
	}
	if anyGlob(m.ExcludedNamespaces, ns) {
		return false
	}
	if m.NamespaceSelector != nil {
		if t.NamespaceLabels == nil || !m.NamespaceSelector.Matches(labels.Set(t.NamespaceLabels)) {
			return false
		}
	}
	return true
}

// KindMatches reports whether the match can select objects of group/kind.
func (m *Match) kindMatches(group, kind string) bool {
	if len(m.Kinds) == 0 {
		return true
	}
	for _, k := range m.Kinds {
		if anyOrWild(k.APIGroups, group) && anyOrWild(k.Kinds, kind) {
			return true
		}
	}
	return false
}

// KindMatches reports whether objects of group/kind can match.
func (m *Match) KindMatches(group, kind string) bool { return m.kindMatches(group, kind) }

func anyOrWild(list []string, v string) bool {
	if len(list) == 0 {
		return true
	}
	for _, s := range list {
		if s == "*" || s == v {
			return true
		}
	}
	return false
}

func anyGlob(globs []string, v string) bool {
	for _, g := range globs {
		if globMatch(g, v) {
			return true
		}
	}
	return false
}

// globMatch matches v against a name with an optional "*" at its front or
// end ("kube-*", "*-system", "*").
func globMatch(g, v string) bool {
	switch {
	case g == "*":
		return true
	case strings.HasPrefix(g, "*") && strings.HasSuffix(g, "*") && len(g) > 1:
		return strings.Contains(v, g[1:len(g)-1])
	case strings.HasPrefix(g, "*"):
		return strings.HasSuffix(v, g[1:])
	case strings.HasSuffix(g, "*"):
		return strings.HasPrefix(v, g[:len(g)-1])
	}
	return g == v
}
