// Package scheduling decides which clusters a Placement selects. Schedule is a pure
// function of a Snapshot and a Placement; the placement controller builds the
// snapshot from its caches and writes the Result as PlacementDecisions and status.
//
// A pass reads as numbered steps (see Schedule): build plugins from the registry,
// find eligible clusters from bound cluster sets, filter (clusters the hub
// accepted only, ocm.Accepted; then the plugins), score, rank, select,
// order, and divide into decision groups. Paginate turns groups into the
// PlacementDecision objects the controller writes.
package scheduling
