package history

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"flotilla.dev/flotilla/internal/dburl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// OpenPostgres connects to the PostgreSQL database at url
// ("postgres://user:password@host:port/db?sslmode=..." or a key=value DSN, as
// pgx reads them) and brings its schema up to date. Concurrent hubs may open
// the same database: each migration is applied once, under an advisory lock.
func OpenPostgres(ctx context.Context, dsn string) (Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's message may quote the string, and a password can sit in
		// its query (?password=, sslpassword=): none of it is shown.
		return nil, fmt.Errorf("postgres: the connection string does not parse (not shown: it may hold a password); check its form: postgres://user:password@host:port/database?sslmode=...")
	}
	// The name in messages (which reach the API's callers and the logs) is
	// built from the parsed parts that hold no secret.
	name := fmt.Sprintf("postgres %s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(8)
	s := &sqlStore{db: db, rebind: dollarPlaceholders, name: name, readOnlyTx: true,
		// Any constant key: flotilla's compliance migrations.
		migrationLock: `SELECT pg_advisory_xact_lock(7316021)`}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Open opens the store a --compliance-db value names: a postgres:// or
// postgresql:// URL is PostgreSQL, anything else a SQLite file path.
func Open(ctx context.Context, db string) (Store, error) {
	if dburl.IsPostgres(db) {
		return OpenPostgres(ctx, db)
	}
	return OpenSQLite(ctx, db)
}

// dollarPlaceholders turns "?" into PostgreSQL's $1, $2, ... (the queries hold
// no "?" in literals).
func dollarPlaceholders(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
