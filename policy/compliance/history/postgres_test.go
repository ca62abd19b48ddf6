package history_test

import (
	"context"
	"database/sql"
	"regexp"
	"strconv"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"flotilla.dev/flotilla/internal/pgtest"
	"flotilla.dev/flotilla/policy/compliance/history"
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

func TestPostgresChain(t *testing.T) {
	srv := pgtest.Start(t)
	storetest.RunChain(t, func(t *testing.T) (storetest.Opener, storetest.Exec) {
		url := srv.NewDatabase(t)
		return func() (history.Store, error) { return history.Open(context.Background(), url) },
			func(t *testing.T, stmt string, args ...any) {
				t.Helper()
				db, err := sql.Open("pgx", url)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				n := 0
				stmt = regexp.MustCompile(`\?`).ReplaceAllStringFunc(stmt, func(string) string { n++; return "$" + strconv.Itoa(n) })
				if _, err := db.Exec(stmt, args...); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
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
	// A password in the query, or with no user part, is never shown either
	// (the error reaches the API's callers): a server that refuses them
	// (nothing listens on port 1) is named by its parts alone.
	for _, dsn := range []string{"postgres://u@127.0.0.1:1/db?password=S3cret&connect_timeout=1",
		"postgres://127.0.0.1:1/db?user=u&password=S3cret&connect_timeout=1",
		"postgres://u:S3cret@127.0.0.1:1/db?sslpassword=S3cret&connect_timeout=1"} {
		_, err := history.Open(ctx, dsn)
		if err == nil || strings.Contains(err.Error(), "S3cret") || !strings.Contains(err.Error(), "u@127.0.0.1:1/db") {
			t.Errorf("Open(%s) err = %v, want the server named without the password", strings.ReplaceAll(dsn, "S3cret", "***"), err)
		}
	}
}
