// Package controller reconciles Placements (cluster.open-cluster-management.io/v1beta1).
//
// Each pass builds a scheduling.Snapshot from the manager's caches, calls
// scheduling.Schedule, and writes the result:
//
//   - PlacementDecisions named <placement>-decision-<N> (at most 100 clusters each,
//     labels cluster.open-cluster-management.io/placement, .../decision-group-index,
//     .../decision-group-name), owned by the Placement so they go with it; at least
//     one, possibly empty, always exists. Objects are only written when they differ,
//     in scheduling.PageWrites order: a cluster that stays decided is on some page
//     after every write (gaining pages first, deletions last). Decisions first, then
//     status, so a consumer can tell a settled answer (decisions add up to
//     numberOfSelectedClusters) from one being written.
//   - Placement status: numberOfSelectedClusters, decisionGroups, and the conditions
//     PlacementSatisfied (reasons AllDecisionsScheduled, NotAllDecisionsScheduled,
//     NoManagedClusterSetBindings, NoIntersection, AllManagedClusterSetsEmpty,
//     NoManagedClusterMatched) and PlacementMisconfigured (reasons Succeedconfigured,
//     Misconfigured). A misconfigured Placement keeps its previous decisions.
//
// Passes are triggered by the Placement, by changes of clusters' labels, claims,
// taints and allocatable resources, of cluster sets and bindings, of
// AddOnPlacementScores (for placements that use them), by a deleted decision, and
// by time (expiring tolerations and scores). No finalizer.
package controller
