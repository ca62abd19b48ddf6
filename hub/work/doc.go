// Package work is the hub side of work distribution.
//
//   - The ManifestWork validating webhook (WebhookPath, Webhooks): on create and
//     on updates that change the manifests, a work must have manifests, none
//     empty, each with apiVersion, kind and metadata.name (no generateName), no
//     two alike, and at most Options.ManifestLimit bytes in total (default
//     500 KiB). Every problem names the manifest by index and kind (Validate).
//   - The namespace check controller: a ManifestWork in a namespace that belongs
//     to no ManagedCluster gets a Warning event NotAClusterNamespace (and its
//     creator an admission warning), since no agent will ever apply it. It owns
//     no conditions and no finalizer.
//
// The CLI's operations on works (create per cluster or placement, list, get,
// delete) are in the sub-package ops.
package work
