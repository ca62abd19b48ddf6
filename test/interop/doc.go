// Package interop checks Flotilla against upstream Open Cluster Management's own
// binaries, built from their public source into .upstream/bin beforehand (`make interop`): upstream
// clusteradm against a Flotilla hub, upstream registration and work agents joined
// to a Flotilla hub, a Flotilla klusterlet joined to a hub run by upstream's
// registration controller, and upstream v1beta1 addon clients. The test (build
// tag interop) prints a table of checks with pass/fail; docs/interop.md says how
// to run it and which upstream commits it last passed against.
package interop
