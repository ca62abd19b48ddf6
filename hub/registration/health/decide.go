package health

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// Condition reasons and the lease name, as OCM writes them.
const (
	LeaseName                 = "managed-cluster-lease"
	ReasonLeaseUpdateStopped  = "ManagedClusterLeaseUpdateStopped"
	DefaultGraceMultiplier    = 5
	DefaultLeaseDurationSecs  = 60
	leaseStoppedMessageFormat = "Registration agent stopped updating its lease within %s."
)

// LeaseDuration is the cluster's lease period (spec.leaseDurationSeconds, default 60s).
func LeaseDuration(cluster *clusterv1.ManagedCluster) time.Duration {
	secs := cluster.Spec.LeaseDurationSeconds
	if secs <= 0 {
		secs = DefaultLeaseDurationSecs
	}
	return time.Duration(secs) * time.Second
}

// Grace is how long a cluster's lease may go unrenewed before the hub calls it
// stale: multiplier x its lease duration (multiplier <= 0 means
// DefaultGraceMultiplier).
func Grace(multiplier int, cluster *clusterv1.ManagedCluster) time.Duration {
	if multiplier <= 0 {
		multiplier = DefaultGraceMultiplier
	}
	return time.Duration(multiplier) * LeaseDuration(cluster)
}

// LastHeard is when the hub last heard from an accepted cluster, counted from
// no earlier than the hub accepted it (the HubAcceptedManagedCluster
// condition's lastTransitionTime): its lease's renewTime when that is later,
// else that acceptance. The clock starts at acceptance, and again at each
// re-acceptance: a denied agent cannot renew its lease (its RoleBindings are
// gone), so after a deny longer than the grace the lease is old when the
// admin accepts the cluster again, while its agent is alive and renews at its
// next round. Measured from the renewal alone, the cluster would be stale
// until then, and an auto-approve user would be given its identity.
func LastHeard(renewTime *metav1.MicroTime, accepted metav1.Condition) time.Time {
	if renewTime != nil && renewTime.After(accepted.LastTransitionTime.Time) {
		return renewTime.Time
	}
	return accepted.LastTransitionTime.Time
}

// LeaseStale reports whether a lease last renewed at renewed is older than grace
// at now, and how long until it becomes so when it is not.
func LeaseStale(renewed, now time.Time, grace time.Duration) (bool, time.Duration) {
	left := renewed.Add(grace).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}

// Taints returns the cluster's taints with the availability taints set from its
// Available condition: unreachable when Unknown or missing, unavailable when
// False, neither when True. Other taints are kept untouched; an existing taint
// keeps its timeAdded. changed is false when the result equals current.
func Taints(current []clusterv1.Taint, conditions []metav1.Condition, now metav1.Time) (out []clusterv1.Taint, changed bool) {
	want := ""
	switch cond := meta.FindStatusCondition(conditions, clusterv1.ManagedClusterConditionAvailable); {
	case cond == nil || cond.Status == metav1.ConditionUnknown:
		want = clusterv1.ManagedClusterTaintUnreachable
	case cond.Status == metav1.ConditionFalse:
		want = clusterv1.ManagedClusterTaintUnavailable
	}
	have := false
	for _, t := range current {
		switch t.Key {
		case clusterv1.ManagedClusterTaintUnreachable, clusterv1.ManagedClusterTaintUnavailable:
			if t.Key != want {
				changed = true
				continue
			}
			have = true
		}
		out = append(out, t)
	}
	if want != "" && !have {
		out = append(out, clusterv1.Taint{Key: want, Effect: clusterv1.TaintEffectNoSelect, TimeAdded: now})
		changed = true
	}
	return out, changed
}
