// Package placementtest builds the Placement "all" and its PlacementDecisions
// as the placement controller writes them, for tests of the readers of a
// Placement's answer (internal/placementread and its users).
package placementtest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// Name is the Placement's name; UID its UID (a decision's owner).
const (
	Name = "all"
	UID  = "p-uid"
)

// Placement is Placement ns/all at generation 1 that selected `selected`
// clusters, Satisfied for that generation when scheduled.
func Placement(ns string, selected int32, scheduled bool) *clusterv1beta1.Placement {
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: ns, UID: UID, Generation: 1}}
	p.Status.NumberOfSelectedClusters = selected
	if scheduled {
		p.Status.Conditions = []metav1.Condition{{Type: clusterv1beta1.PlacementConditionSatisfied, Status: metav1.ConditionTrue,
			Reason: "AllDecisionsScheduled", ObservedGeneration: 1}}
	}
	return p
}

// Decision is PlacementDecision ns/name of Placement all, in group 0,
// deciding clusters, controlled by the Placement with ownerUID ("": none).
func Decision(ns, name, ownerUID string, clusters ...string) *clusterv1beta1.PlacementDecision {
	d := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Labels: map[string]string{clusterv1beta1.PlacementLabel: Name, clusterv1beta1.DecisionGroupIndexLabel: "0"}}}
	if ownerUID != "" {
		yes := true
		d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "cluster.open-cluster-management.io/v1beta1", Kind: "Placement",
			Name: Name, UID: types.UID(ownerUID), Controller: &yes}}
	}
	for _, c := range clusters {
		d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
	}
	return d
}
