package scheduling

import (
	"time"

	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
)

// Snapshot is everything one scheduling pass reads. The controller builds it from
// its caches; tests build it by hand. Clusters may be shared (read-only) between
// passes.
type Snapshot struct {
	// Clusters are all ManagedClusters, with derived lookups.
	Clusters []*framework.ClusterInfo
	// ClusterSets are all ManagedClusterSets.
	ClusterSets []*clusterv1beta2.ManagedClusterSet
	// Members, when set, holds SetMembers(Clusters, ClusterSets), computed once
	// for the passes that share these clusters and sets; a set it does not hold
	// is computed in the pass.
	Members map[string][]int
	// Bindings are the ManagedClusterSetBindings in the Placement's namespace.
	Bindings []*clusterv1beta2.ManagedClusterSetBinding
	// Decided are the clusters in the Placement's current PlacementDecisions.
	Decided []string
	// DecisionCounts is, per cluster, the number of OTHER placements deciding on it.
	// Only read when the Balance prioritizer is active (see NeedsDecisionCounts).
	DecisionCounts map[string]int
	// Now is the scheduling instant.
	Now time.Time
}

// NewClusterInfos builds ClusterInfos for clusters, attaching AddOnPlacementScores
// from each cluster's namespace.
func NewClusterInfos(clusters []*clusterv1.ManagedCluster, scores []*clusterv1alpha1.AddOnPlacementScore) []*framework.ClusterInfo {
	byNS := map[string][]*clusterv1alpha1.AddOnPlacementScore{}
	for _, s := range scores {
		byNS[s.Namespace] = append(byNS[s.Namespace], s)
	}
	out := make([]*framework.ClusterInfo, 0, len(clusters))
	for _, c := range clusters {
		out = append(out, framework.NewClusterInfo(c, byNS[c.Name]))
	}
	return out
}
