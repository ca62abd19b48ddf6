// Package ops holds the placement operations the CLI performs against a hub:
// create a Placement, list Placements with their selected clusters, put clusters
// into a ManagedClusterSet, and bind a set to a namespace. Each takes a client and
// an options struct; cmd/flotilla only parses flags and prints.
package ops
