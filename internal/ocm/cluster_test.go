package ocm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

func TestAccepted(t *testing.T) {
	granted := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: s}}
	}
	for _, tt := range []struct {
		name       string
		accepts    bool
		conditions []metav1.Condition
		want       bool
	}{
		{"pending join (the bootstrap identity created it)", false, nil, false},
		{"accepted by an admin, rights not granted yet", true, nil, false},
		{"accepted and granted", true, granted(metav1.ConditionTrue), true},
		{"denied, the hub has not revoked yet", false, granted(metav1.ConditionTrue), false},
		{"denied and revoked", false, granted(metav1.ConditionFalse), false},
		{"accepted, namespace conflict", true, granted(metav1.ConditionFalse), false},
		{"accepted, condition unknown", true, granted(metav1.ConditionUnknown), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &clusterv1.ManagedCluster{Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: tt.accepts},
				Status: clusterv1.ManagedClusterStatus{Conditions: tt.conditions}}
			assert.Equal(t, tt.want, Accepted(c))
		})
	}
	assert.False(t, Accepted(nil), "a cluster that does not exist")
}
