package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"flotilla.dev/flotilla/policy/compliance"
)

// sqlStore is the Store over database/sql shared by the SQL databases; rebind
// turns the "?" placeholders its queries use into the database's own.
type sqlStore struct {
	db     *sql.DB
	rebind func(string) string
	name   string // for errors: "sqlite /path/to/file"
	// readOnlyTx marks read transactions read-only and repeatable read, so
	// that every query of one sees the same database (PostgreSQL; SQLite's
	// driver refuses the options, and its read transactions see one
	// snapshot).
	readOnlyTx bool
	// migrationLock, when set, is run first in each migration's transaction
	// so that concurrent hubs apply a migration once (PostgreSQL).
	migrationLock string
	// cache is the last window read, kept current from Record (cache.go).
	cache windowCache
}

var _ Store = (*sqlStore)(nil)

// readTx is the options of a read transaction.
func (s *sqlStore) readTx() *sql.TxOptions {
	if !s.readOnlyTx {
		return nil
	}
	return &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead}
}

// migrate creates schema_migrations and applies the migrations not yet
// recorded there, each in its own transaction.
func (s *sqlStore) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_us BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("%s: create schema_migrations: %w", s.name, err)
	}
	var have sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("%s: read schema version: %w", s.name, err)
	}
	if int(have.Int64) > len(migrations) {
		return fmt.Errorf("%s: schema version %d is newer than this flotilla knows (%d): upgrade flotilla", s.name, have.Int64, len(migrations))
	}
	for v := int(have.Int64) + 1; v <= len(migrations); v++ {
		if err := s.apply(ctx, v); err != nil {
			return err
		}
	}
	return nil
}

func (s *sqlStore) apply(ctx context.Context, version int) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: migration %d: %w", s.name, version, err)
	}
	defer func() { _ = tx.Rollback() }()
	if s.migrationLock != "" {
		if _, err := tx.ExecContext(ctx, s.migrationLock); err != nil {
			return fmt.Errorf("%s: migration %d: lock: %w", s.name, version, err)
		}
		var done int
		err := tx.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`), version).Scan(&done)
		if err != nil {
			return fmt.Errorf("%s: migration %d: %w", s.name, version, err)
		}
		if done > 0 { // another hub applied it meanwhile
			return nil
		}
	}
	for _, stmt := range strings.Split(migrations[version-1], ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: migration %d: %w", s.name, version, err)
		}
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO schema_migrations (version, applied_us) VALUES (?, ?)`), version, time.Now().UnixMicro()); err != nil {
		return fmt.Errorf("%s: record migration %d: %w", s.name, version, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: migration %d: %w", s.name, version, err)
	}
	return nil
}

// Record validates every event first, then inserts them in one transaction:
// either all new events are stored or none.
func (s *sqlStore) Record(ctx context.Context, events ...Event) (int, error) {
	var errs []error
	for i, e := range events {
		if err := e.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("event %d: %w", i, err))
		}
	}
	if len(errs) > 0 {
		return 0, fmt.Errorf("%s: nothing recorded: %w", s.name, errors.Join(errs...))
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("%s: record: %w", s.name, err)
	}
	defer func() { _ = tx.Rollback() }()
	stmt, err := tx.PrepareContext(ctx, s.rebind(`INSERT INTO compliance_events (policy, template, cluster, state, message, time_us)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`))
	if err != nil {
		return 0, fmt.Errorf("%s: record: %w", s.name, err)
	}
	defer stmt.Close()
	var added []Event
	for _, e := range events {
		us := e.Time.UTC().UnixMicro()
		res, err := stmt.ExecContext(ctx, e.Policy, e.Template, e.Cluster, string(e.State), e.Message, us)
		if err != nil {
			return 0, fmt.Errorf("%s: record %s/%s on %s: %w", s.name, e.Policy, e.Template, e.Cluster, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("%s: record: %w", s.name, err)
		}
		if n > 0 {
			e.Time = time.UnixMicro(us).UTC() // as read back
			added = append(added, e)
		}
	}
	series, err := tx.PrepareContext(ctx, s.rebind(`INSERT INTO compliance_series (policy, cluster, template) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`))
	if err != nil {
		return 0, fmt.Errorf("%s: record: %w", s.name, err)
	}
	defer series.Close()
	seen := map[Key]bool{}
	for _, e := range events {
		if k := e.Key(); !seen[k] {
			seen[k] = true
			if _, err := series.ExecContext(ctx, k.Policy, k.Cluster, k.Template); err != nil {
				return 0, fmt.Errorf("%s: record the series %s/%s on %s: %w", s.name, k.Policy, k.Template, k.Cluster, err)
			}
		}
	}
	var writes int64
	if len(added) > 0 {
		if writes, err = s.bumpWrites(ctx, tx); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("%s: record: %w", s.name, err)
	}
	if len(added) > 0 {
		s.cache.recorded(added, writes)
	}
	return len(added), nil
}

// bumpWrites counts a write that changed the events in compliance_writes
// and returns the new count. On PostgreSQL the row's lock also orders the
// writers: a transaction that bumped it commits before the next can.
func (s *sqlStore) bumpWrites(ctx context.Context, tx *sql.Tx) (int64, error) {
	var n int64
	if err := tx.QueryRowContext(ctx, `UPDATE compliance_writes SET n = n + 1 WHERE id = 1 RETURNING n`).Scan(&n); err != nil {
		return 0, fmt.Errorf("%s: count the write: %w", s.name, err)
	}
	return n, nil
}

// Events reads the selected events, oldest first.
func (s *sqlStore) Events(ctx context.Context, q Query) ([]Event, error) {
	where, args := q.where()
	return s.readEvents(ctx, s.db, where, args)
}

// where is the query's WHERE clause ("" for everything) and its arguments.
func (q Query) where() (string, []any) {
	var where []string
	var args []any
	for _, c := range []struct{ col, val string }{{"policy", q.Policy}, {"template", q.Template}, {"cluster", q.Cluster}} {
		if c.val != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.val)
		}
	}
	if !q.Since.IsZero() {
		where = append(where, "time_us >= ?")
		args = append(args, q.Since.UTC().UnixMicro())
	}
	if len(where) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(where, " AND "), args
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *sqlStore) readEvents(ctx context.Context, db querier, where string, args []any) ([]Event, error) {
	query := `SELECT policy, template, cluster, state, message, time_us FROM compliance_events` + where +
		" ORDER BY time_us, policy, template, cluster, state, message"
	rows, err := db.QueryContext(ctx, s.rebind(query), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: read events: %w", s.name, err)
	}
	defer rows.Close()
	var out []Event
	in := interner{}
	var policy, template, cluster, state, message sql.RawBytes
	for rows.Next() {
		var us int64
		if err := rows.Scan(&policy, &template, &cluster, &state, &message, &us); err != nil {
			return nil, fmt.Errorf("%s: read events: %w", s.name, err)
		}
		out = append(out, Event{Policy: in.get(policy), Template: in.get(template), Cluster: in.get(cluster),
			State: compliance.State(in.get(state)), Message: in.get(message), Time: time.UnixMicro(us).UTC()})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: read events: %w", s.name, err)
	}
	return out, nil
}

// interner shares one string per distinct value read: a window's events
// repeat the same few policies, clusters, states and messages.
type interner map[string]string

func (in interner) get(b []byte) string {
	if s, ok := in[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	in[s] = s
	return s
}

func (s *sqlStore) Close() error { return s.db.Close() }

// Latest reads, in one read transaction, the newest event before the time of
// every template of each pair.
func (s *sqlStore) Latest(ctx context.Context, before time.Time, pairs []PolicyCluster) ([]Event, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	tx, err := s.db.BeginTx(ctx, s.readTx())
	if err != nil {
		return nil, fmt.Errorf("%s: read latest events: %w", s.name, err)
	}
	defer func() { _ = tx.Rollback() }()
	// Newest first on the (policy, cluster, time_us) index; the first row of
	// each template is its newest.
	stmt, err := tx.PrepareContext(ctx, s.rebind(`SELECT template, state, message, time_us FROM compliance_events
		WHERE policy = ? AND cluster = ? AND time_us < ? ORDER BY time_us DESC`))
	if err != nil {
		return nil, fmt.Errorf("%s: read latest events: %w", s.name, err)
	}
	defer stmt.Close()
	us := before.UTC().UnixMicro()
	var out []Event
	for _, p := range pairs {
		rows, err := stmt.QueryContext(ctx, p.Policy, p.Cluster, us)
		if err != nil {
			return nil, fmt.Errorf("%s: read latest events of %s on %s: %w", s.name, p.Policy, p.Cluster, err)
		}
		seen := map[string]bool{}
		for rows.Next() {
			e := Event{Policy: p.Policy, Cluster: p.Cluster}
			var state string
			var t int64
			if err := rows.Scan(&e.Template, &state, &e.Message, &t); err != nil {
				rows.Close()
				return nil, fmt.Errorf("%s: read latest events: %w", s.name, err)
			}
			if seen[e.Template] {
				continue
			}
			seen[e.Template] = true
			e.State, e.Time = compliance.State(state), time.UnixMicro(t).UTC()
			out = append(out, e)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: read latest events: %w", s.name, err)
		}
	}
	return out, nil
}

// Prune deletes the events older than before that are not the newest of their
// series.
func (s *sqlStore) Prune(ctx context.Context, before time.Time) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("%s: prune: %w", s.name, err)
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM compliance_events WHERE time_us < ? AND time_us < (
		SELECT MAX(n.time_us) FROM compliance_events n
		WHERE n.policy = compliance_events.policy AND n.template = compliance_events.template AND n.cluster = compliance_events.cluster)`),
		before.UTC().UnixMicro())
	if err != nil {
		return 0, fmt.Errorf("%s: prune events before %s: %w", s.name, before.UTC().Format(time.RFC3339), err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: prune: %w", s.name, err)
	}
	if n > 0 {
		if _, err := s.bumpWrites(ctx, tx); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("%s: prune: %w", s.name, err)
	}
	if n > 0 {
		s.cache.invalidate()
	}
	return int(n), nil
}
