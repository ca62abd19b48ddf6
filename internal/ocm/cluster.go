package ocm

import (
	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// Accepted reports whether the hub has accepted cluster: an admin set
// spec.hubAcceptsClient and the hub granted the cluster its rights
// (condition HubAcceptedManagedCluster=True). A cluster nobody accepted yet (a
// pending join: its agent created it with the bootstrap identity), a denied
// one (hubAcceptsClient back to false, even before the hub revoked anything)
// and one whose acceptance the hub has not applied yet are not: nothing may be
// placed on them, nor written for them (replicated policies, works).
func Accepted(cluster *clusterv1.ManagedCluster) bool {
	return cluster != nil && cluster.Spec.HubAcceptsClient &&
		meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted)
}

// AcceptanceChanged reports whether an update of a ManagedCluster changed
// whether the hub accepts it (Accepted); an object that is not a
// ManagedCluster counts as a change. Controllers that skip clusters the hub
// has not accepted watch for it.
func AcceptanceChanged(old, cur any) bool {
	o, okOld := old.(*clusterv1.ManagedCluster)
	c, okNew := cur.(*clusterv1.ManagedCluster)
	return !okOld || !okNew || Accepted(o) != Accepted(c)
}
