package history_test

import (
	"context"
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
