package controller

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling"
)

func TestDesiredStatus(t *testing.T) {
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 4}}
	groups := []scheduling.Group{
		{Index: 0, Name: "canary", Clusters: []scheduling.Decision{{ClusterName: "a"}}},
		{Index: 1, Clusters: []scheduling.Decision{{ClusterName: "b"}, {ClusterName: "c"}}},
	}
	res := &scheduling.Result{Decisions: []scheduling.Decision{{ClusterName: "a"}, {ClusterName: "b"}, {ClusterName: "c"}},
		Groups: groups, Satisfied: true, Reason: scheduling.ReasonAllDecisionsScheduled, Message: "All 3 ManagedClusters selected"}
	st := desiredStatus(p, res, scheduling.Paginate("p", groups, false))

	assert.Equal(t, int32(3), st.NumberOfSelectedClusters)
	assert.Equal(t, []clusterv1beta1.DecisionGroupStatus{
		{DecisionGroupIndex: 0, DecisionGroupName: "canary", Decisions: []string{"p-decision-1"}, ClustersCount: 1},
		{DecisionGroupIndex: 1, Decisions: []string{"p-decision-2"}, ClustersCount: 2},
	}, st.DecisionGroups)
	sat := meta.FindStatusCondition(st.Conditions, clusterv1beta1.PlacementConditionSatisfied)
	assert.Equal(t, metav1.ConditionTrue, sat.Status)
	assert.Equal(t, int64(4), sat.ObservedGeneration)
	mis := meta.FindStatusCondition(st.Conditions, clusterv1beta1.PlacementConditionMisconfigured)
	assert.Equal(t, ReasonSucceedconfigured, mis.Reason)

	// Misconfigured later: conditions flip, counts and groups stay as they were.
	p.Status = st
	bad := desiredStatus(p, &scheduling.Result{Misconfigured: errors.New("spec.predicates[0]: broken")}, nil)
	assert.Equal(t, int32(3), bad.NumberOfSelectedClusters)
	assert.Len(t, bad.DecisionGroups, 2)
	mis = meta.FindStatusCondition(bad.Conditions, clusterv1beta1.PlacementConditionMisconfigured)
	assert.Equal(t, metav1.ConditionTrue, mis.Status)
	assert.Contains(t, mis.Message, "spec.predicates[0]: broken")
	assert.Contains(t, mis.Message, "previous decisions are kept")
	assert.Equal(t, metav1.ConditionFalse, meta.FindStatusCondition(bad.Conditions, clusterv1beta1.PlacementConditionSatisfied).Status)
}
