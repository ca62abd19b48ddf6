// Package work is the hub side of work distribution.
//
//   - The ManifestWork validating webhook (WebhookPath, Webhooks): on create and
//     on updates that change the manifests, a work must have manifests, none
//     empty, each with apiVersion, kind and metadata.name (no generateName), no
//     two alike, and at most Options.ManifestLimit bytes in total (default
//     500 KiB). Every problem names the manifest by index and kind (Validate).
//     A create or spec change of a work with spec.executor is admitted only
//     when its requester may `execute-as` the executor (CheckExecutor: a
//     SubjectAccessReview on work.open-cluster-management.io manifestworks, in
//     the work's namespace, named system:serviceaccount:<ns>:<name>, as OCM
//     checks); with Options.NilExecutorValidating, a work without one is
//     checked as DefaultExecutorName, the agent's own identity.
//
//   - The ManifestWorkReplicaSet validating webhook (ReplicaSetWebhookPath):
//     the template's manifests as a work's, and the same execute-as check of
//     the author for the template's executor, in the replica set's namespace
//     (the hub writes its works, so the work webhook never sees the author).
//
//   - The ManagedClusterAddOn webhook (AddonWebhookPath), with
//     Options.NilExecutorValidating only: setting or changing spec.configs, or
//     an install namespace other than the default, needs the execute-as on
//     DefaultExecutorName that a work without executor needs, in the cluster
//     namespace (the hub deploys what they choose with the agent's identity).
//
//   - The namespace check controller: a ManifestWork in a namespace that belongs
//     to no ManagedCluster gets a Warning event NotAClusterNamespace (and its
//     creator an admission warning), since no agent will ever apply it. It owns
//     no conditions and no finalizer.
//
//   - The TTL controller: a work with spec.deleteOption.ttlSecondsAfterFinished
//     is deleted that long after its Complete condition turned True (ExpiryFor),
//     unless a ManifestWorkReplicaSet made it.
//
// The CLI's operations on works (create per cluster or placement, list, get,
// delete) are in the sub-package ops.
package work
