package history_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"flotilla.dev/flotilla/policy/compliance/history"
	"flotilla.dev/flotilla/policy/compliance/history/storetest"
)

func TestSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		path := filepath.Join(t.TempDir(), "compliance.db")
		return func() (history.Store, error) { return history.OpenSQLite(context.Background(), path) }
	})
}

func TestSQLiteChain(t *testing.T) {
	storetest.RunChain(t, func(t *testing.T) (storetest.Opener, storetest.Exec) {
		path := filepath.Join(t.TempDir(), "compliance.db")
		return func() (history.Store, error) { return history.OpenSQLite(context.Background(), path) },
			func(t *testing.T, stmt string, args ...any) {
				t.Helper()
				db, err := sql.Open("sqlite", path)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if _, err := db.Exec(stmt, args...); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
	})
}

func TestSQLiteRefuses(t *testing.T) {
	ctx := context.Background()
	if _, err := history.OpenSQLite(ctx, ""); err == nil {
		t.Error("OpenSQLite(\"\") succeeded, want an error")
	}
	notDB := filepath.Join(t.TempDir(), "not-a-database")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("this is not sqlite\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := history.OpenSQLite(ctx, notDB); err == nil || !strings.Contains(err.Error(), notDB) {
		if s != nil {
			s.Close()
		}
		t.Errorf("OpenSQLite(not a database) err = %v, want an error naming the file", err)
	}
	if _, err := history.OpenSQLite(ctx, filepath.Join(t.TempDir(), "missing-dir", "x.db")); err == nil {
		t.Error("OpenSQLite in a missing directory succeeded, want an error")
	}
}

// A database written by a newer flotilla (a schema version this one does not
// know) is refused with a message saying to upgrade, not silently used.
func TestSQLiteRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "compliance.db")
	s, err := history.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, applied_us) VALUES (99, 0)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := history.OpenSQLite(ctx, path); err == nil || !strings.Contains(err.Error(), "upgrade flotilla") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("OpenSQLite(schema 99) err = %v, want a refusal saying to upgrade", err)
	}
}
