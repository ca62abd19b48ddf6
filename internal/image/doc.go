// Package image builds Flotilla's container image without Docker and without a
// registry: one layer holding the static flotilla binary (every subcommand: hub,
// klusterlet, addon agents) and a passwd entry for the non-root user it runs as,
// on an empty base (FROM scratch). Build makes the image; WriteArchive writes
// images into one tar that is both an OCI image layout (index.json, oci-layout,
// blobs/) for `ctr images import` and a docker archive (manifest.json) for
// `docker load`.
//
// The same binary always gives the same image digest: file times, owners and
// the image's creation time are fixed, entries are sorted.
package image
