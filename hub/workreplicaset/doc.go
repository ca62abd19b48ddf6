// Package workreplicaset reconciles ManifestWorkReplicaSets (work.open-cluster-management.io/v1alpha1):
// it fans spec.manifestWorkTemplate out as one ManifestWork per cluster decided by
// the Placements in spec.placementRefs, following each ref's rollout strategy
// (planned by package rollout), and removes the works of clusters that leave.
//
// It never deletes on a missing or half-written answer: while a referenced
// Placement is missing, cannot be read, has not scheduled its current spec yet, or
// its decisions do not add up to its status.numberOfSelectedClusters (being
// rewritten, or the cache is behind), the works of that ref are kept and looked at
// again soon (internal/placementread judges the answer). Only removing the ref from spec.placementRefs,
// or a settled decision without the cluster, removes a work.
//
// A decided cluster the hub has not accepted (ocm.Accepted: a pending join, a
// denied cluster, one that is gone) gets no work written, whatever the decision
// says; a work it has is kept until the placement drops it (SplitDecisions).
// The placement controller never decides such a cluster; this is defence in
// depth against a decision written before it saw the cluster.
//
// Generated works are named after the replica set, live in the cluster's namespace
// and carry the labels work.open-cluster-management.io/manifestworkreplicaset
// (<namespace>.<name>) and work.open-cluster-management.io/placementname.
//
// Conditions owned: PlacementVerified (AsExpected, PlacementDecisionNotFound,
// PlacementDecisionEmpty), PlacementRolledOut (Complete, Progressing),
// ManifestworkApplied (AsExpected, Processing, NotAsExpected); status.summary and
// status.placementSummary count the works. Finalizer
// work.open-cluster-management.io/manifest-work-cleanup: deletion removes the works
// first (Foreground, the default, waits until they are gone; Background does not).
//
// Enabled by default (upstream OCM keeps it behind a feature gate).
package workreplicaset
