// Package placement wires Flotilla's placement capability into the hub: Setup
// registers the cluster-set and binding controllers (hub/clusterset), the Placement
// controller (hub/placement/controller, scheduling with hub/placement/scheduling)
// and the ManifestWorkReplicaSet controller (hub/workreplicaset); Webhooks names the
// admission checks for ManagedClusterSetBindings and Placements
// (hub/placement/admission). See docs/placement.md.
package placement
