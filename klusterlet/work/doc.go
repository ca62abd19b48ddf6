// Package work is the work agent of the klusterlet: it applies the ManifestWorks
// of its cluster's hub namespace to the managed cluster and reports their status
// back to the hub.
//
// Resources and what the agent owns on them:
//
//   - ManifestWork (hub, namespace = cluster name): the finalizer
//     cluster.open-cluster-management.io/manifest-work-cleanup, written while
//     the first pass applies (in parallel; the status waits for it) and removed
//     once the work's resources are deleted (or orphaned); the whole status: per-manifest conditions Applied, Available,
//     StatusFeedbackSynced with feedback values, work-level Applied and
//     Available (see package status for the reasons), the conditions of
//     spec.manifestConfigs[].conditionRules per manifest and aggregated per
//     work (package rules: Complete, Progressing, Degraded, custom), and
//     Conflict (per
//     manifest and per work) when another work carries the same object with
//     different content (package conflict: the work that managed it first
//     keeps it; the other does not write it and reports Applied=False,
//     reason ManifestConflict).
//   - AppliedManifestWork (managed cluster, cluster-scoped, named
//     <hubHash>-<workName>): created per ManifestWork with the finalizer
//     cluster.open-cluster-management.io/applied-manifest-work-cleanup and the
//     label work.flotilla.dev/cluster (the cluster's name) before anything is
//     applied; its status.appliedResources records every applied resource
//     with its UID, written after the work's status (cleanup also finds the
//     work's objects owned by the record that it does not list yet).
//   - The applied resources: each carries an owner reference to its
//     AppliedManifestWork and the annotations work.flotilla.dev/manifest-hash
//     and work.flotilla.dev/manifest-metadata-keys, which say what manifest was
//     last applied to it (package apply).
//
// Two loops run: the ManifestWork reconciler (controller.go, finalize.go),
// driven by the hub informer, by changes to applied resources on the managed
// cluster (watch.go) and by a periodic re-check every StatusSyncInterval; and
// the evictor (eviction.go), which removes AppliedManifestWorks whose
// ManifestWork is gone once the grace period has passed.
package work
