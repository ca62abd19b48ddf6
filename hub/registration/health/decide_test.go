package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

func available(s metav1.ConditionStatus) []metav1.Condition {
	return []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: s}}
}

func taint(key string, at metav1.Time) clusterv1.Taint {
	return clusterv1.Taint{Key: key, Effect: clusterv1.TaintEffectNoSelect, TimeAdded: at}
}

func TestTaints(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Hour))
	custom := clusterv1.Taint{Key: "example.com/gpu", Effect: clusterv1.TaintEffectPreferNoSelect, TimeAdded: then}
	unreachable, unavailable := clusterv1.ManagedClusterTaintUnreachable, clusterv1.ManagedClusterTaintUnavailable
	tests := []struct {
		name       string
		current    []clusterv1.Taint
		conditions []metav1.Condition
		want       []clusterv1.Taint
		changed    bool
	}{
		{"no condition yet: unreachable", nil, nil, []clusterv1.Taint{taint(unreachable, now)}, true},
		{"unknown: unreachable", nil, available(metav1.ConditionUnknown), []clusterv1.Taint{taint(unreachable, now)}, true},
		{"false: unavailable", nil, available(metav1.ConditionFalse), []clusterv1.Taint{taint(unavailable, now)}, true},
		{"true: no taint", nil, available(metav1.ConditionTrue), nil, false},
		{"true removes unreachable, keeps custom", []clusterv1.Taint{custom, taint(unreachable, then)}, available(metav1.ConditionTrue), []clusterv1.Taint{custom}, true},
		{"unknown keeps existing timeAdded", []clusterv1.Taint{taint(unreachable, then)}, available(metav1.ConditionUnknown), []clusterv1.Taint{taint(unreachable, then)}, false},
		{"false swaps unreachable for unavailable", []clusterv1.Taint{taint(unreachable, then), custom}, available(metav1.ConditionFalse), []clusterv1.Taint{custom, taint(unavailable, now)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := Taints(tt.current, tt.conditions, now)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.changed, changed)
		})
	}
}

func TestLeaseStale(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)
	stale, _ := LeaseStale(now.Add(-5*time.Minute-time.Second), now, 5*time.Minute)
	assert.True(t, stale)
	stale, left := LeaseStale(now.Add(-time.Minute), now, 5*time.Minute)
	assert.False(t, stale)
	assert.Equal(t, 4*time.Minute, left)
	assert.Equal(t, 60*time.Second, LeaseDuration(&clusterv1.ManagedCluster{}))
}

func TestGraceAndLastHeard(t *testing.T) {
	mc := &clusterv1.ManagedCluster{Spec: clusterv1.ManagedClusterSpec{LeaseDurationSeconds: 10}}
	assert.Equal(t, 50*time.Second, Grace(5, mc))
	assert.Equal(t, 50*time.Second, Grace(0, mc), "default multiplier")
	assert.Equal(t, 3*time.Minute, Grace(3, &clusterv1.ManagedCluster{}), "default lease duration")

	accepted := metav1.Condition{LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	renewed := metav1.NewMicroTime(time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC))
	assert.Equal(t, renewed.Time, LastHeard(&renewed, accepted), "the lease's renewal")
	assert.Equal(t, accepted.LastTransitionTime.Time, LastHeard(nil, accepted), "no renewal: the clock starts at acceptance")
	reaccepted := metav1.Condition{LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC))}
	assert.Equal(t, reaccepted.LastTransitionTime.Time, LastHeard(&renewed, reaccepted),
		"a renewal before the (re-)acceptance: the clock starts at the acceptance (a denied agent cannot renew)")
}
