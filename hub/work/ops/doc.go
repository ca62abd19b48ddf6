// Package ops holds the ManifestWork operations the CLI performs against a hub:
// load manifests from files, create one ManifestWork per cluster (named
// clusters, or the clusters a Placement decided on, or a ManifestWorkReplicaSet
// for a Placement), list and show works with their status, and delete them.
// Each takes a client and an options struct. PrintWorks and PrintWork render
// what `get works` shows (table, or the objects as JSON/YAML); cmd/flotilla
// only parses flags and calls them.
package ops
