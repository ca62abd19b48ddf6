package registration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAddonLeaseCondition(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.MicroTime { m := metav1.NewMicroTime(now.Add(-d)); return &m }
	for _, tc := range []struct {
		name   string
		renew  *metav1.MicroTime
		secs   int32
		found  bool
		status metav1.ConditionStatus
		reason string
	}{
		{"fresh", at(10 * time.Second), 60, true, metav1.ConditionTrue, "ManagedClusterAddOnLeaseUpdated"},
		{"late but within 5 durations", at(4 * time.Minute), 60, true, metav1.ConditionTrue, "ManagedClusterAddOnLeaseUpdated"},
		{"stale", at(301 * time.Second), 60, true, metav1.ConditionUnknown, "ManagedClusterAddOnLeaseUpdateStopped"},
		{"short lease stale", at(6 * time.Second), 1, true, metav1.ConditionUnknown, "ManagedClusterAddOnLeaseUpdateStopped"},
		{"duration unset means 60s", at(200 * time.Second), 0, true, metav1.ConditionTrue, "ManagedClusterAddOnLeaseUpdated"},
		{"never renewed", nil, 60, true, metav1.ConditionUnknown, "ManagedClusterAddOnLeaseUpdateStopped"},
		{"missing", nil, 0, false, metav1.ConditionUnknown, "ManagedClusterAddOnLeaseNotFound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := AddonLeaseCondition(tc.renew, tc.secs, now, tc.found)
			assert.Equal(t, "Available", c.Type)
			assert.Equal(t, tc.status, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
		})
	}
}
