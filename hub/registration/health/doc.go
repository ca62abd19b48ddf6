// Package health watches each accepted cluster's heartbeat and keeps its taints in
// step with its availability.
//
// Resource: cluster.open-cluster-management.io/v1 ManagedCluster (and the Lease
// managed-cluster-lease in the cluster namespace). It owns the
// ManagedClusterConditionAvailable=Unknown verdict (reason
// ManagedClusterLeaseUpdateStopped) when the lease is older than GraceMultiplier x
// leaseDurationSeconds, and the taints cluster.open-cluster-management.io/unreachable
// (Available Unknown or missing) and .../unavailable (Available False). No finalizer.
// The decisions are the pure functions LeaseStale and Taints.
package health
