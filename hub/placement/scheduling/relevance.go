package scheduling

import (
	"maps"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/internal/ocm"
)

// MayAffect reports whether a change of one cluster from old to new can change
// what placement p decides. It errs on the side of true: a false answer means the
// placement provably does not need re-scheduling. setKeys are the label keys the
// label-selector ManagedClusterSets select on (a change there can move the
// cluster between sets). old or new nil (created, deleted) is always relevant.
func MayAffect(p *clusterv1beta1.Placement, old, new *clusterv1.ManagedCluster, setKeys map[string]bool) bool {
	if old == nil || new == nil || (old.DeletionTimestamp == nil) != (new.DeletionTimestamp == nil) ||
		ocm.Accepted(old) != ocm.Accepted(new) {
		return true
	}
	if !reflect.DeepEqual(old.Spec.Taints, new.Spec.Taints) {
		return true
	}
	labels := changedKeys(old.Labels, new.Labels)
	claims := changedKeys(claimMap(old), claimMap(new))
	allocatable := !reflect.DeepEqual(old.Status.Allocatable, new.Status.Allocatable)
	if len(labels) == 0 && len(claims) == 0 && !allocatable {
		return false
	}
	for k := range labels {
		if k == "cluster.open-cluster-management.io/clusterset" || setKeys[k] {
			return true // set membership may change
		}
	}
	spec := &p.Spec
	for _, pred := range spec.Predicates {
		sel := pred.RequiredClusterSelector
		if len(sel.CelSelector.CelExpressions) > 0 {
			return true // CEL can read anything
		}
		if selectorUses(sel.LabelSelector, labels) || requirementsUse(sel.ClaimSelector.MatchExpressions, claims) {
			return true
		}
	}
	for _, t := range spec.SpreadPolicy.SpreadConstraints {
		if (t.TopologyKeyType == clusterv1beta1.TopologyKeyTypeClaim && claims[t.TopologyKey]) ||
			(t.TopologyKeyType != clusterv1beta1.TopologyKeyTypeClaim && labels[t.TopologyKey]) {
			return true
		}
	}
	for _, g := range spec.DecisionStrategy.GroupStrategy.DecisionGroups {
		if selectorUses(g.ClusterSelector.LabelSelector, labels) || requirementsUse(g.ClusterSelector.ClaimSelector.MatchExpressions, claims) {
			return true
		}
	}
	if allocatable {
		for _, c := range spec.PrioritizerPolicy.Configurations {
			if c.ScoreCoordinate != nil && (c.ScoreCoordinate.BuiltIn == "ResourceAllocatableCPU" || c.ScoreCoordinate.BuiltIn == "ResourceAllocatableMemory") {
				return true
			}
		}
	}
	return false
}

func changedKeys(a, b map[string]string) map[string]bool {
	if maps.Equal(a, b) {
		return nil
	}
	out := map[string]bool{}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			out[k] = true
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out[k] = true
		}
	}
	return out
}

func claimMap(c *clusterv1.ManagedCluster) map[string]string {
	m := make(map[string]string, len(c.Status.ClusterClaims))
	for _, cl := range c.Status.ClusterClaims {
		m[cl.Name] = cl.Value
	}
	return m
}

func selectorUses(s metav1.LabelSelector, keys map[string]bool) bool {
	for k := range s.MatchLabels {
		if keys[k] {
			return true
		}
	}
	return requirementsUse(s.MatchExpressions, keys)
}

func requirementsUse(rs []metav1.LabelSelectorRequirement, keys map[string]bool) bool {
	for _, r := range rs {
		if keys[r.Key] {
			return true
		}
	}
	return false
}
