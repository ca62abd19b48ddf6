package registration_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/klusterlet/registration"
)

// TestShorterLeasePeriodTakesEffectAtOnce: an agent renewing every 10 minutes
// is asked by the hub for a 1 s period. It must renew at the new period from
// its next status sync, not after the renewal already scheduled on the old
// period: the hub's grace (5 x 1 s) would expire long before that and mark a
// running cluster Unknown.
func TestShorterLeasePeriodTakesEffectAtOnce(t *testing.T) {
	ctx := context.Background()
	newAgent(t, env.Clusters[1], "period", "agent-period", func(o *registration.Options) { o.LeaseDurationSeconds = 600 }).start()
	require.Eventually(t, func() bool { return hubCluster(t, "period") != nil }, timeout, tick)
	acceptClusters(t, "period")
	waitCondition(t, "period", clusterv1.ManagedClusterConditionAvailable, metav1.ConditionTrue)

	leases := kube(env.Hub.Config).CoordinationV1().Leases("period")
	renewed := func() time.Time {
		l, err := leases.Get(ctx, registration.LeaseName, metav1.GetOptions{})
		require.NoError(t, err)
		if l.Spec.RenewTime == nil {
			return time.Time{}
		}
		return l.Spec.RenewTime.Time
	}
	require.Eventually(t, func() bool { return !renewed().IsZero() }, timeout, tick, "the agent renews its lease once joined")

	changed := time.Now()
	require.NoError(t, updateCluster(env.Hub.Config, "period", func(mc *clusterv1.ManagedCluster) { mc.Spec.LeaseDurationSeconds = 1 }))
	// Two renewals after the change, well inside the old 600 s period.
	var first time.Time
	require.Eventually(t, func() bool {
		r := renewed()
		if first.IsZero() {
			if r.After(changed) {
				first = r
			}
			return false
		}
		return r.After(first)
	}, timeout, tick, "the agent did not take the 1 s period up before its 600 s renewal was due")
	waitCondition(t, "period", clusterv1.ManagedClusterConditionAvailable, metav1.ConditionTrue)
}
