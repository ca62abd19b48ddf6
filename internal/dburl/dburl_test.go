package dburl

import "testing"

func TestIsPostgres(t *testing.T) {
	for db, want := range map[string]bool{
		"postgres://u@h/db":        true,
		"postgresql://u:p@h:5432/": true,
		"/var/lib/compliance.db":   false,
		"compliance.db":            false,
		"POSTGRES://h/db":          false, // the schemes are lower case, as libpq reads them
		"":                         false,
	} {
		if got := IsPostgres(db); got != want {
			t.Errorf("IsPostgres(%q) = %v, want %v", db, got, want)
		}
	}
}
