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
// A replica set may name a DistributionPolicy (flotilla.dev/v1alpha1, in its
// namespace) with the annotation flotilla.dev/distribution-policy: each
// cluster's work is then rendered with the policy's overrides and replica
// division (package distribute), carries the hash of its own rendered spec as
// its revision, and a cluster whose render fails gets nothing written (it
// keeps its last good work). Flotilla's condition DistributionPolicyApplied
// (Rendered, RenderFailed, PolicyNotFound, PolicyInvalid) says how it went;
// the replica set's entry in the policy's status counts the overrides per
// cluster and sums the divided workloads' replicas from the works' status
// feedback. The policy's admission webhook (PolicyValidator,
// /validate-distributionpolicy) is served from here too.
//
// Enabled by default (upstream OCM keeps it behind a feature gate).
//
// # Design: facts, a pure plan, then the writes
//
// Reconcile (reconcile.go) reads top to bottom: get the replica set and its
// works; on deletion, finalize; ensure the finalizer; then
//
//  1. facts: read everything a decision needs into Facts (facts.go): for each
//     placementRef the placementread.Read answer or its error, and whether the
//     hub accepted each decided cluster (with its labels, claims and
//     allocatable resources when a policy is named); the works by cluster; the
//     template and its hash; the named DistributionPolicy; the clock;
//  2. plan: a pure function from Facts to a Plan (plan.go): each cluster's
//     render (distribution.go, with package distribute), the works to
//     create or update (Apply), to delete and to keep, each ref's outcome, the
//     status (summaries and conditions) and when to look again. Every rule
//     above is decided here and nowhere else, and TestPlan tables them;
//  3. execute: write each Apply (render, render.go, builds the cluster's
//     ManifestWork from the replica set and the Apply: the one place a
//     cluster's work is shaped), delete the works to delete, write the status
//     (fitted with internal/conditions.Fit) if it changed; errors are joined,
//     not stopped at.
//
// Controllers that turn placement decisions into per-cluster objects can
// follow the same shape: read facts, decide purely, write at the end.
package workreplicaset
