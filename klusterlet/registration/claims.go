package registration

import (
	"slices"
	"sort"

	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
)

// SpokeOnlyLabel keeps a ClusterClaim on the managed cluster.
const SpokeOnlyLabel = "open-cluster-management.io/spoke-only"

// MaxCustomClaims caps the custom (non-reserved) claims reported to the hub.
const MaxCustomClaims = 20

// SelectClaims turns the managed cluster's ClusterClaims into the hub's
// status.clusterClaims: reserved claims always (sorted), then custom claims
// sorted by name and capped at MaxCustomClaims; spoke-only claims never.
func SelectClaims(claims []clusterv1alpha1.ClusterClaim) []clusterv1.ManagedClusterClaim {
	var reserved, custom []clusterv1.ManagedClusterClaim
	for _, c := range claims {
		if _, spokeOnly := c.Labels[SpokeOnlyLabel]; spokeOnly {
			continue
		}
		claim := clusterv1.ManagedClusterClaim{Name: c.Name, Value: c.Spec.Value}
		if slices.Contains(clusterv1alpha1.ReservedClusterClaimNames[:], c.Name) {
			reserved = append(reserved, claim)
		} else {
			custom = append(custom, claim)
		}
	}
	byName := func(s []clusterv1.ManagedClusterClaim) {
		sort.Slice(s, func(i, j int) bool { return s[i].Name < s[j].Name })
	}
	byName(reserved)
	byName(custom)
	if len(custom) > MaxCustomClaims {
		custom = custom[:MaxCustomClaims]
	}
	return append(reserved, custom...)
}
