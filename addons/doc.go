// Package addons is the hub's addon manager: OCM's addon framework
// (addon.open-cluster-management.io/v1alpha1), started by `flotilla hub`.
//
// Setup registers, with the hub's controller manager, one controller per
// package:
//
//   - install: a ClusterManagementAddOn's install strategy (Manual, or
//     Placements with rollout strategies);
//   - deploy: one addon on one cluster (ManifestWorks, hub rights, status);
//   - approve: addon agents' CSRs;
//
// and, at start, creates the ClusterManagementAddOn of every addon in the
// registry (framework.Registry) that has none, so `get addon` lists what the
// hub ships. Addons are values in the registry (package framework); nothing
// here knows one by name.
package addons
