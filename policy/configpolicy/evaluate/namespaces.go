package evaluate

import (
	"fmt"
	"path"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// SelectNamespaces returns the sorted names of the namespaces sel selects,
// as upstream does: those matching the label selector (every namespace when
// sel has none) and an include glob (every namespace when include is empty),
// minus those matching an exclude glob. A selector with neither include nor
// a label selector selects nothing (an exclude alone included). Namespaces
// being deleted are selected unless terminatingInclusion is Never (upstream's
// default, IfMatch). Errors are
// worded as upstream's (ReasonedError, reason "namespaceSelector error").
func SelectNamespaces(sel policyv1.Target, all []Namespace) ([]string, error) {
	if selectorIsEmpty(sel) {
		return nil, nil
	}
	fail := func(err error) error {
		return &ReasonedError{ReasonNamespaceSelector, "Error filtering namespaces with provided namespaceSelector: " + err.Error()}
	}
	for _, p := range sel.Include {
		if _, err := path.Match(string(p), ""); err != nil {
			return nil, fail(fmt.Errorf("error parsing 'include' pattern '%s': %w", p, err))
		}
	}
	for _, p := range sel.Exclude {
		if _, err := path.Match(string(p), ""); err != nil {
			return nil, fail(fmt.Errorf("error parsing 'exclude' pattern '%s': %w", p, err))
		}
	}
	selector := labels.Everything()
	if sel.MatchLabels != nil || sel.MatchExpressions != nil {
		s, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: sel.MatchLabels, MatchExpressions: sel.MatchExpressions})
		if err != nil {
			return nil, fail(fmt.Errorf("error parsing namespace LabelSelector: %w", err))
		}
		selector = s
	}
	var out []string
	for _, ns := range all {
		if ns.Terminating && sel.TerminatingInclusion == "Never" {
			continue
		}
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
