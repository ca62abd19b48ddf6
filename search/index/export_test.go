package index

import "flotilla.dev/flotilla/internal/sqldb"

// SchemaUpTo is the index's schema with its first n migrations only: a
// database as an earlier release left it.
func SchemaUpTo(n int) sqldb.Schema {
	s := migrations
	s.Migrations = s.Migrations[:n]
	return s
}

// SetBeforeCommit has s's Apply run f once a change is checked, before it
// is committed.
func SetBeforeCommit(s *Store, f func()) { s.beforeCommit = f }
