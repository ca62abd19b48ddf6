package devenv

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

func TestAcceptanceOf(t *testing.T) {
	hubAccepted := func(st metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: st}}
	}
	tests := []struct {
		name    string
		accepts bool
		conds   []metav1.Condition
		want    Acceptance
	}{
		{"new cluster, never accepted", false, nil, AcceptancePending},
		{"accepted", true, hubAccepted(metav1.ConditionTrue), AcceptanceAccepted},
		{"accepted, hub not done yet", true, nil, AcceptanceAccepted},
		{"denied by an admin after acceptance", false, hubAccepted(metav1.ConditionFalse), AcceptanceDenied},
		{"denied, before the hub noticed", false, hubAccepted(metav1.ConditionTrue), AcceptanceDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := &clusterv1.ManagedCluster{Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: tt.accepts},
				Status: clusterv1.ManagedClusterStatus{Conditions: tt.conds}}
			assert.Equal(t, tt.want, AcceptanceOf(mc))
		})
	}
}
