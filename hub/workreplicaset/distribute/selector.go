package distribute

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
)

// clusterMatcher is a compiled ClusterSelector.
type clusterMatcher struct {
	names  map[string]bool // nil: any name
	labels labels.Selector // nil: any labels
	claims labels.Selector // nil: any claims
}

// compileSelector compiles s; an invalid label or claim selector is an error
// saying which.
func compileSelector(s distv1alpha1.ClusterSelector) (clusterMatcher, error) {
	var m clusterMatcher
	if len(s.Names) > 0 {
		m.names = map[string]bool{}
		for _, n := range s.Names {
			m.names[n] = true
		}
	}
	if s.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(s.LabelSelector)
		if err != nil {
			return m, fmt.Errorf("labelSelector: %w", err)
		}
		m.labels = sel
	}
	if s.ClaimSelector != nil && len(s.ClaimSelector.MatchExpressions) > 0 {
		sel, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: s.ClaimSelector.MatchExpressions})
		if err != nil {
			return m, fmt.Errorf("claimSelector: %w", err)
		}
		m.claims = sel
	}
	return m, nil
}

// matches says whether the cluster is selected: every part set must match.
func (m clusterMatcher) matches(c Cluster) bool {
	if m.names != nil && !m.names[c.Name] {
		return false
	}
	if m.labels != nil && !m.labels.Matches(labels.Set(c.Labels)) {
		return false
	}
	if m.claims != nil && !m.claims.Matches(labels.Set(c.Claims)) {
		return false
	}
	return true
}

// manifestMatches says whether a manifest (its group, kind, namespace, name)
// is selected by any of sels; no selector selects every manifest.
func manifestMatches(sels []distv1alpha1.ManifestSelector, id manifestID) bool {
	if len(sels) == 0 {
		return true
	}
	for _, s := range sels {
		if (s.Kind == "" || s.Kind == id.Kind) && (s.Kind == "" || s.Group == id.Group) && (s.Group == "" || s.Group == id.Group) &&
			(s.Name == "" || s.Name == id.Name) && (s.Namespace == "" || s.Namespace == id.Namespace) {
			return true
		}
	}
	return false
}

// manifestID names a template manifest.
type manifestID struct {
	Group, Kind, Namespace, Name string
}

func (id manifestID) String() string {
	gk := id.Kind
	if id.Group != "" {
		gk += "." + id.Group
	}
	if id.Namespace != "" {
		return gk + " " + id.Namespace + "/" + id.Name
	}
	return gk + " " + id.Name
}
