// Package placementread is the one reader of a Placement's answer for the
// controllers that consume placements: ManifestWorkReplicaSets
// (hub/workreplicaset), addon install strategies (addons/install) and policy
// propagation (policy/propagator).
//
// Read gets the Placement, lists the PlacementDecisions labelled with its name
// (cluster.open-cluster-management.io/placement) and says:
//
//   - whether the decisions can be trusted as its current answer (Readiness:
//     Ready; InFlux: the placement has answered but the pages listed do not add
//     up to status.numberOfSelectedClusters, so roll out to what is listed and
//     delete nothing; Unknown: it has not answered for its current spec, so
//     touch nothing), with the reason for a condition's message;
//   - the pages that are its own (Own): a page controlled by another Placement
//     of the same name, a deleted predecessor not yet garbage collected, is
//     dropped;
//   - the decided clusters (Clusters), once each, in page order, with the
//     decision group (index and name) of the first page that lists them.
//
// A placement whose scheduling is disabled (PlacementDisableAnnotation: another
// scheduler writes its decisions) is trusted as listed.
//
// Design: the consumers decide what a Readiness means for them (keep works,
// keep addons, hold replicas) and word their own conditions; this package only
// reads and judges, so they cannot drift apart on what a trustworthy answer
// is. Check and Clusters are pure and table-tested; Read is the only part with
// a client (a cache-backed client.Reader in every consumer). Ground floor:
// imports nothing of Flotilla, so the hub, addons and policy all import it
// without importing each other (docs/structure.md).
package placementread
