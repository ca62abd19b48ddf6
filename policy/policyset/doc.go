// Package policyset reconciles the status of PolicySets
// (policy.open-cluster-management.io/v1beta1) on the hub: status.placement
// lists the PlacementBindings that bind the set, status.compliant aggregates
// the compliance of its member policies (NonCompliant > Pending > unknown >
// Compliant), and status.statusMessage names the members that are disabled,
// deleted or have not reported yet. Propagation of the members is the
// propagator's (package propagator): this controller only reads.
//
// No finalizer and no conditions. Watches: PolicySets, Policies (roots only,
// mapped to the sets that list them) and PlacementBindings (mapped to the sets
// they bind).
package policyset
