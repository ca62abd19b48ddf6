// Package sets reconciles ManagedClusterSets (cluster.open-cluster-management.io/v1beta2).
//
// It owns the condition ClusterSetEmpty (True, reason NoClusterMatched, when the set
// selects no cluster; False, reason ClustersSelected, with the member count
// otherwise). It creates the built-in sets `default` (ExclusiveClusterSetLabel) and
// `global` (LabelSelector, empty: every cluster) at start, and puts every
// ManagedCluster that carries no cluster.open-cluster-management.io/clusterset label
// into `default`. No finalizer.
package sets
