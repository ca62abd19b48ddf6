// Package apply puts manifests onto the managed cluster. The pure parts decide
// the order manifests are applied in (Order) and whether a live object has
// drifted from its manifest (InSync); the Applier does the I/O with a dynamic
// client and a RESTMapper that refreshes itself when new kinds (CRDs) appear,
// one method per update strategy: Update, CreateOnly, ServerSideApply, ReadOnly.
package apply
