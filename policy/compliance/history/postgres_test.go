package history_test

import (
	"context"
	"strings"
	"testing"

	"flotilla.dev/flotilla/policy/compliance/history"
	"flotilla.dev/flotilla/policy/compliance/history/pgtest"
	"flotilla.dev/flotilla/policy/compliance/history/storetest"
)

// TestPostgres runs the shared suite on a real PostgreSQL server (Debian's
// postgresql package), one fresh database per case.
func TestPostgres(t *testing.T) {
	srv := pgtest.Start(t)
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		url := srv.NewDatabase(t)
		return func() (history.Store, error) { return history.Open(context.Background(), url) }
	})
}

func TestPostgresRefuses(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	if _, err := history.Open(ctx, "postgres://user:secret@[::1"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("Open(bad url) err = %v, want an error without the password", err)
	}
	missing := strings.Replace(srv.URL("postgres"), "/postgres?", "/no_such_db?", 1)
	if s, err := history.Open(ctx, missing); err == nil || !strings.Contains(err.Error(), "no_such_db") {
		if s != nil {
			s.Close()
		}
		t.Errorf("Open(missing database) err = %v, want an error naming it", err)
	}
}
