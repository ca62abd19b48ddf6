// Package install is the hub controller that carries out a
// ClusterManagementAddOn's install strategy.
//
// Resource: ClusterManagementAddOn (cluster-scoped). With installStrategy
// Placements it creates a ManagedClusterAddOn (owned by the
// ClusterManagementAddOn, carrying the placement's configs) in the namespace of
// every cluster the listed Placements decide on, at the pace of each
// placement's rolloutStrategy (All, Progressive, ProgressivePerGroup; the
// planner is hub/workreplicaset/rollout, shared with ManifestWorkReplicaSet),
// and removes the ones it created for clusters no placement decides on any
// more. Decisions that cannot be trusted yet (hub/workreplicaset.CheckDecisions)
// remove nothing. With Manual it does nothing: users create ManagedClusterAddOns.
// It writes status.installProgressions (condition Progressing per placement).
// No finalizer: owner references remove the created ManagedClusterAddOns with it.
package install
