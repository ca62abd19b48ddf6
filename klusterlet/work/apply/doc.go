// Package apply puts manifests onto the managed cluster. The pure parts decide
// the order manifests are applied in (Order), what the Update strategy writes
// (UpdateBody, stamped with the manifest's hash, HashAnnotation) and when
// (UpdateStep, Drifted), and whether server-side applied fields still hold
// (Covers); the Applier does the I/O with a dynamic
// client and a RESTMapper that refreshes itself when new kinds (CRDs) appear,
// one method per update strategy: Update, CreateOnly, ServerSideApply, ReadOnly.
package apply
