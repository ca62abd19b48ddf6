package history

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

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
		return nil, fmt.Errorf("postgres %s: %w", redact(dsn), err)
	}
	name := "postgres " + redact(dsn)
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
	if IsPostgres(db) {
		return OpenPostgres(ctx, db)
	}
	return OpenSQLite(ctx, db)
}

// IsPostgres reports whether a --compliance-db value is a PostgreSQL URL.
func IsPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
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

// redact hides the password of a URL (or of a key=value DSN) for messages.
func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	if scheme, rest, ok := strings.Cut(dsn, "://"); ok {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			user, _, _ := strings.Cut(rest[:at], ":")
			return scheme + "://" + user + ":xxxxx@" + rest[at+1:]
		}
		return dsn
	}
	if strings.Contains(dsn, "password") {
		return "(connection string with a password)"
	}
	return dsn
}
