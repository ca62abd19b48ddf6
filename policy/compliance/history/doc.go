// Package history records compliance transitions (policy, template, cluster,
// state, message, time) and answers questions over them: when a cluster last
// became NonCompliant, how long remediation took, what changed since a date.
//
// Store is the interface; Open returns the SQLite implementation (pure Go,
// modernc.org/sqlite). Every implementation runs the shared suite in
// storetest, so another database (PostgreSQL) is added against the same tests.
// The schema is a list of numbered migrations applied in order at Open.
package history
