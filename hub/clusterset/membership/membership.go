// Package membership decides which ManagedClusters belong to a ManagedClusterSet.
// It is pure: the cluster-set controller and the placement scheduler both use it.
package membership

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

// Built-in cluster sets.
const (
	// DefaultSet is an ExclusiveClusterSetLabel set that clusters join when they
	// carry no cluster-set label.
	DefaultSet = "default"
	// GlobalSet is a LabelSelector set with an empty selector: every cluster.
	GlobalSet = "global"
)

// Selector returns the label selector that picks the set's members.
//
//   - ExclusiveClusterSetLabel (or unset): label cluster.open-cluster-management.io/clusterset=<set name>.
//   - LabelSelector: spec.clusterSelector.labelSelector; empty or absent selects every cluster.
func Selector(set *clusterv1beta2.ManagedClusterSet) (labels.Selector, error) {
	switch set.Spec.ClusterSelector.SelectorType {
	case clusterv1beta2.ExclusiveClusterSetLabel, "":
		req, err := labels.NewRequirement(clusterv1beta2.ClusterSetLabel, selection.Equals, []string{set.Name})
		if err != nil {
			return nil, fmt.Errorf("ManagedClusterSet %q: %w", set.Name, err)
		}
		return labels.NewSelector().Add(*req), nil
	case clusterv1beta2.LabelSelector:
		if set.Spec.ClusterSelector.LabelSelector == nil {
			return labels.Everything(), nil
		}
		s, err := metav1.LabelSelectorAsSelector(set.Spec.ClusterSelector.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("ManagedClusterSet %q: spec.clusterSelector.labelSelector: %w", set.Name, err)
		}
		return s, nil
	default:
		return nil, fmt.Errorf("ManagedClusterSet %q: spec.clusterSelector.selectorType %q is not ExclusiveClusterSetLabel or LabelSelector",
			set.Name, set.Spec.ClusterSelector.SelectorType)
	}
}

// Members returns the names of the clusters in set, in the order of clusters.
func Members(set *clusterv1beta2.ManagedClusterSet, clusters []*clusterv1.ManagedCluster) ([]string, error) {
	sel, err := Selector(set)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range clusters {
		if sel.Matches(labels.Set(c.Labels)) {
			out = append(out, c.Name)
		}
	}
	return out, nil
}
