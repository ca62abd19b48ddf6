// Package sqldb opens the hub's SQL stores, SQLite (the pure-Go driver) or
// PostgreSQL (pgx), and brings their schema up to date with numbered
// migrations. The compliance history (policy/compliance/history) and the
// fleet search index (search/index) are both built on it: one way to name a
// database (a postgres:// URL or a SQLite file path, internal/dburl), one
// migration table, one set of connection settings.
package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"flotilla.dev/flotilla/internal/dburl"
)

// DB is an open database.
type DB struct {
	*sql.DB
	// Name is the database for messages: "sqlite /path" or
	// "postgres user@host:port/db" (never a password).
	Name string
	// Postgres is true for PostgreSQL, false for SQLite.
	Postgres bool
	// Rebind turns the "?" placeholders of a query into the database's own
	// ($1, $2, ... on PostgreSQL). The queries hold no "?" in literals.
	Rebind func(string) string
}

// Schema names a store's migrations.
type Schema struct {
	// Table records the applied migrations, e.g. schema_migrations. Required.
	Table string
	// Migrations are applied in order; migration i (from 1) is recorded in
	// Table once applied. Never edit a released migration: append a new one.
	// Statements are separated by ";" and hold none in literals.
	Migrations []string
	// LockKey is the PostgreSQL advisory lock taken in each migration's
	// transaction, so that concurrent hubs apply a migration once. Any
	// constant of the store's own.
	LockKey int64
}

// Open opens the database db names (a postgres:// or postgresql:// URL is
// PostgreSQL, anything else a SQLite file path, created if needed) and
// applies s's migrations not yet applied.
func Open(ctx context.Context, db string, s Schema) (*DB, error) {
	if dburl.IsPostgres(db) {
		return OpenPostgres(ctx, db, s)
	}
	return OpenSQLite(ctx, db, s)
}

// OpenSQLite opens (creating it if needed) the SQLite database at path and
// applies s's migrations.
func OpenSQLite(ctx context.Context, path string, s Schema) (*DB, error) {
	d, err := openSQLite(path)
	if err != nil {
		return nil, err
	}
	return d.start(ctx, s)
}

// OpenPostgres connects to the PostgreSQL database dsn names
// ("postgres://user:password@host:port/db?sslmode=..." or a key=value DSN, as
// pgx reads them) and applies s's migrations. Concurrent hubs may open the
// same database: each migration is applied once, under s.LockKey.
func OpenPostgres(ctx context.Context, dsn string, s Schema) (*DB, error) {
	d, err := openPostgres(dsn)
	if err != nil {
		return nil, err
	}
	return d.start(ctx, s)
}

func (d *DB) start(ctx context.Context, s Schema) (*DB, error) {
	if err := d.PingContext(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("%s: %w", d.Name, err)
	}
	if err := d.Migrate(ctx, s); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func openSQLite(path string) (*DB, error) {
	if path == "" {
		return nil, fmt.Errorf("sqlite: no database path given")
	}
	// temp_store(MEMORY): a statement's journal and temporary tables stay in
	// memory. On disk they need a writable temporary directory, which a Pod
	// with a read-only root file system lacks ("disk I/O error (6410)",
	// SQLITE_IOERR_GETTEMPPATH, on the first statement that writes many rows).
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=temp_store(MEMORY)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	// One writer at a time is SQLite's model; one connection avoids "database is locked".
	db.SetMaxOpenConns(1)
	return &DB{DB: db, Name: "sqlite " + path, Rebind: func(q string) string { return q }}, nil
}

func openPostgres(dsn string) (*DB, error) {
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
	return &DB{DB: db, Name: name, Postgres: true, Rebind: dollarPlaceholders}, nil
}

// ReadTx is the options of a read transaction: read-only and repeatable read
// on PostgreSQL, so that every query of one sees the same database; nil on
// SQLite (its driver refuses the options, and its read transactions see one
// snapshot).
func (d *DB) ReadTx() *sql.TxOptions {
	if !d.Postgres {
		return nil
	}
	return &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead}
}

// Migrate creates s.Table and applies the migrations not yet recorded there,
// each in its own transaction. A database newer than s is refused.
func (d *DB) Migrate(ctx context.Context, s Schema) error {
	if _, err := d.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+s.Table+` (version INTEGER PRIMARY KEY, applied_us BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("%s: create %s: %w", d.Name, s.Table, err)
	}
	var have sql.NullInt64
	if err := d.QueryRowContext(ctx, `SELECT MAX(version) FROM `+s.Table).Scan(&have); err != nil {
		return fmt.Errorf("%s: read schema version: %w", d.Name, err)
	}
	if int(have.Int64) > len(s.Migrations) {
		return fmt.Errorf("%s: schema version %d (%s) is newer than this flotilla knows (%d): upgrade flotilla", d.Name, have.Int64, s.Table, len(s.Migrations))
	}
	for v := int(have.Int64) + 1; v <= len(s.Migrations); v++ {
		if err := d.apply(ctx, s, v); err != nil {
			return err
		}
	}
	return nil
}

func (d *DB) apply(ctx context.Context, s Schema, version int) error {
	tx, err := d.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: migration %d: %w", d.Name, version, err)
	}
	defer func() { _ = tx.Rollback() }()
	if d.Postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(`+strconv.FormatInt(s.LockKey, 10)+`)`); err != nil {
			return fmt.Errorf("%s: migration %d: lock: %w", d.Name, version, err)
		}
		var done int
		err := tx.QueryRowContext(ctx, d.Rebind(`SELECT COUNT(*) FROM `+s.Table+` WHERE version = ?`), version).Scan(&done)
		if err != nil {
			return fmt.Errorf("%s: migration %d: %w", d.Name, version, err)
		}
		if done > 0 { // another hub applied it meanwhile
			return nil
		}
	}
	for _, stmt := range strings.Split(s.Migrations[version-1], ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: migration %d: %w", d.Name, version, err)
		}
	}
	if _, err := tx.ExecContext(ctx, d.Rebind(`INSERT INTO `+s.Table+` (version, applied_us) VALUES (?, ?)`), version, time.Now().UnixMicro()); err != nil {
		return fmt.Errorf("%s: record migration %d: %w", d.Name, version, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: migration %d: %w", d.Name, version, err)
	}
	return nil
}

// dollarPlaceholders turns "?" into PostgreSQL's $1, $2, ...
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
