package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling"
)

// PlacementMisconfigured reasons (OCM's).
const (
	ReasonSucceedconfigured = "Succeedconfigured"
	ReasonMisconfigured     = "Misconfigured"
)

// desiredStatus computes the Placement status for a scheduling result and the
// pages written for it. With a misconfigured result only the conditions change.
func desiredStatus(p *clusterv1beta1.Placement, res *scheduling.Result, pages []scheduling.Page) clusterv1beta1.PlacementStatus {
	st := *p.Status.DeepCopy()
	if res.Misconfigured != nil {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: clusterv1beta1.PlacementConditionMisconfigured,
			Status: metav1.ConditionTrue, Reason: ReasonMisconfigured, ObservedGeneration: p.Generation,
			Message: res.Misconfigured.Error() + "; the previous decisions are kept until the Placement is fixed"})
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: clusterv1beta1.PlacementConditionSatisfied,
			Status: metav1.ConditionFalse, Reason: ReasonMisconfigured, ObservedGeneration: p.Generation,
			Message: "The Placement is misconfigured; see the PlacementMisconfigured condition"})
		return st
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: clusterv1beta1.PlacementConditionMisconfigured,
		Status: metav1.ConditionFalse, Reason: ReasonSucceedconfigured, ObservedGeneration: p.Generation,
		Message: "Placement configurations check pass"})
	satisfied := metav1.ConditionFalse
	if res.Satisfied {
		satisfied = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: clusterv1beta1.PlacementConditionSatisfied,
		Status: satisfied, Reason: res.Reason, Message: res.Message, ObservedGeneration: p.Generation})
	st.NumberOfSelectedClusters = int32(len(res.Decisions))
	st.DecisionGroups = nil
	for _, g := range res.Groups {
		gs := clusterv1beta1.DecisionGroupStatus{DecisionGroupIndex: g.Index, DecisionGroupName: g.Name,
			ClustersCount: int32(len(g.Clusters)), Decisions: []string{}}
		for _, pg := range pages {
			if pg.Labels[clusterv1beta1.DecisionGroupIndexLabel] == itoa(g.Index) {
				gs.Decisions = append(gs.Decisions, pg.Name)
			}
		}
		st.DecisionGroups = append(st.DecisionGroups, gs)
	}
	return st
}
