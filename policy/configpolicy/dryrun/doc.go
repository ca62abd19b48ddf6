// Package dryrun evaluates ConfigurationPolicies against objects read from
// YAML or JSON files, with no cluster: the library behind
// `flotilla policy dryrun`. It reports compliance, the messages a cluster
// would show, and what enforce would create, update or delete.
//
// The policy file may hold ConfigurationPolicies, or OCM Policies that wrap
// them in spec.policy-templates (as the public policy-collection does);
// PlacementBindings, Placements and other kinds beside them are ignored.
package dryrun
