// Package dburl tells which store a --compliance-db value names: the hub's
// deployment (hub/deploy) checks a Secret's URL with it, and the compliance
// history (policy/compliance/history) opens the store it names, without
// either importing the other.
package dburl

import "strings"

// IsPostgres reports whether db is a PostgreSQL URL (postgres:// or
// postgresql://); anything else is a SQLite file path.
func IsPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}
