package history

import (
	"context"

	"flotilla.dev/flotilla/internal/dburl"
	"flotilla.dev/flotilla/internal/sqldb"
)

// schema is the history's migrations (migrations.go) in schema_migrations,
// applied under its own advisory lock on PostgreSQL.
var schema = sqldb.Schema{Table: "schema_migrations", Migrations: migrations, LockKey: 7316021}

// OpenPostgres connects to the PostgreSQL database at url
// ("postgres://user:password@host:port/db?sslmode=..." or a key=value DSN, as
// pgx reads them) and brings its schema up to date. Concurrent hubs may open
// the same database: each migration is applied once, under an advisory lock.
func OpenPostgres(ctx context.Context, dsn string) (Store, error) {
	d, err := sqldb.OpenPostgres(ctx, dsn, schema)
	if err != nil {
		return nil, err
	}
	return newSQLStore(ctx, d)
}

// OpenSQLite opens (creating it if needed) the SQLite database at path and
// brings its schema up to date.
func OpenSQLite(ctx context.Context, path string) (Store, error) {
	d, err := sqldb.OpenSQLite(ctx, path, schema)
	if err != nil {
		return nil, err
	}
	return newSQLStore(ctx, d)
}

// Open opens the store a --compliance-db value names: a postgres:// or
// postgresql:// URL is PostgreSQL, anything else a SQLite file path.
func Open(ctx context.Context, db string) (Store, error) {
	if dburl.IsPostgres(db) {
		return OpenPostgres(ctx, db)
	}
	return OpenSQLite(ctx, db)
}
