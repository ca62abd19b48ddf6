package ocm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/meta"
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

func TestAcceptanceChanged(t *testing.T) {
	pending := &clusterv1.ManagedCluster{}
	accepted := &clusterv1.ManagedCluster{Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	meta.SetStatusCondition(&accepted.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionTrue, Reason: "HubClusterAdminAccepted"})
	relabelled := accepted.DeepCopy()
	relabelled.Labels = map[string]string{"env": "prod"}
	for name, tc := range map[string]struct {
		old, cur any
		want     bool
	}{
		"accepted":           {pending, accepted, true},
		"denied":             {accepted, pending, true},
		"only labels change": {accepted, relabelled, false},
		"still pending":      {pending, pending.DeepCopy(), false},
		"not a cluster":      {"x", accepted, true},
	} {
		if got := AcceptanceChanged(tc.old, tc.cur); got != tc.want {
			t.Errorf("%s: AcceptanceChanged = %v, want %v", name, got, tc.want)
		}
	}
}
