// Package ops holds the library behind the CLI's governance verbs on the hub:
// Create (a Policy wrapping ConfigurationPolicies, and its PlacementBinding),
// List (root policies with their per-cluster compliance) and Describe (one
// policy's clusters and their last messages). The cobra commands in
// cmd/flotilla only parse flags, call these and print.
package ops
