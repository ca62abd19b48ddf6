package evaluate

import (
	"fmt"
	"path"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// SelectNamespaces returns the sorted names of the namespaces sel selects:
// those matching an include glob (every namespace when include is empty but a
// label selector is set) and the label selector, minus those matching an
// exclude glob (exclude wins). An empty selector selects nothing.
func SelectNamespaces(sel policyv1.Target, all []Namespace) ([]string, error) {
	hasLabels := len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0
	if len(sel.Include) == 0 && !hasLabels {
		return nil, nil
	}
	for i, p := range sel.Include {
		if _, err := path.Match(string(p), ""); err != nil {
			return nil, fmt.Errorf("namespaceSelector.include[%d] %q is not a valid glob: %w", i, p, err)
		}
	}
	for i, p := range sel.Exclude {
		if _, err := path.Match(string(p), ""); err != nil {
			return nil, fmt.Errorf("namespaceSelector.exclude[%d] %q is not a valid glob: %w", i, p, err)
		}
	}
	selector := labels.Everything()
	if hasLabels {
		s, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: sel.MatchLabels, MatchExpressions: sel.MatchExpressions})
		if err != nil {
			return nil, fmt.Errorf("namespaceSelector: %w", err)
		}
		selector = s
	}
	var out []string
	for _, ns := range all {
		if len(sel.Include) > 0 && !matchAny(sel.Include, ns.Name) {
			continue
		}
		if matchAny(sel.Exclude, ns.Name) || !selector.Matches(labels.Set(ns.Labels)) {
			continue
		}
		out = append(out, ns.Name)
	}
	sort.Strings(out)
	return out, nil
}

func matchAny(globs []policyv1.NonEmptyString, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(string(g), name); ok {
			return true
		}
	}
	return false
}
