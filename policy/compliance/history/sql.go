package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"flotilla.dev/flotilla/internal/sqldb"
	"flotilla.dev/flotilla/policy/compliance"
)

// sqlStore is the Store over database/sql shared by the SQL databases
// (internal/sqldb opens them and applies the migrations).
type sqlStore struct {
	db     *sql.DB
	rebind func(string) string
	name   string // for errors: "sqlite /path/to/file"
	// readTx is the options of a read transaction (sqldb.DB.ReadTx).
	readTx func() *sql.TxOptions
	// cache is the last window read, kept current from Record (cache.go).
	cache windowCache
	// legacy is set while the database holds events recorded before
	// migration 5 (no Seq), which Record replaces by their twins.
	legacy atomic.Bool
}

var _ Store = (*sqlStore)(nil)

// newSQLStore is the store over d, whose schema is up to date; it closes d
// when it fails.
func newSQLStore(ctx context.Context, d *sqldb.DB) (*sqlStore, error) {
	s := &sqlStore{db: d.DB, rebind: d.Rebind, name: d.Name, readTx: d.ReadTx}
	var legacy int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM compliance_events WHERE seq IS NULL LIMIT 1) l`).Scan(&legacy); err != nil {
		d.Close()
		return nil, fmt.Errorf("%s: look for events recorded before migration 5: %w", s.name, err)
	}
	s.legacy.Store(legacy > 0)
	return s, nil
}

// Record validates every event first, then inserts them in one transaction:
// either all new events are stored or none. The events are stored in time
// order (stable: among equal times, in the order given), each numbered (Seq)
// and chained to its series (chain.go). The transaction starts by bumping
// compliance_writes, whose row lock on PostgreSQL orders concurrent writers,
// so that numbers and links are taken one writer at a time.
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
	if len(events) == 0 {
		return 0, nil
	}
	events = slices.Clone(events)
	for i := range events {
		events[i].Time = time.UnixMicro(events[i].Time.UTC().UnixMicro()).UTC() // as stored
		events[i].Seq = 0
	}
	slices.SortStableFunc(events, func(a, b Event) int { return a.Time.Compare(b.Time) })

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("%s: record: %w", s.name, err)
	}
	defer func() { _ = tx.Rollback() }()
	var writes, seq int64
	var head string
	if err := tx.QueryRowContext(ctx, `UPDATE compliance_writes SET n = n + 1 WHERE id = 1 RETURNING n, seq, head`).Scan(&writes, &seq, &head); err != nil {
		return 0, fmt.Errorf("%s: count the write: %w", s.name, err)
	}
	insert, err := tx.PrepareContext(ctx, s.rebind(`INSERT INTO compliance_events (policy, template, cluster, state, message, time_us, seq, prev, hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`))
	if err != nil {
		return 0, fmt.Errorf("%s: record: %w", s.name, err)
	}
	defer insert.Close()
	heads := map[Key]string{} // the series' heads as this write leaves them
	seriesHead := func(k Key) (string, error) {
		if h, ok := heads[k]; ok {
			return h, nil
		}
		var h string
		err := tx.QueryRowContext(ctx, s.rebind(`SELECT head FROM compliance_series WHERE policy = ? AND cluster = ? AND template = ?`), k.Policy, k.Cluster, k.Template).Scan(&h)
		if errors.Is(err, sql.ErrNoRows) {
			_, err = tx.ExecContext(ctx, s.rebind(`INSERT INTO compliance_series (policy, cluster, template, head, anchor) VALUES (?, ?, ?, '', '')`), k.Policy, k.Cluster, k.Template)
		}
		if err != nil {
			return "", fmt.Errorf("%s: record the series %s/%s on %s: %w", s.name, k.Policy, k.Template, k.Cluster, err)
		}
		heads[k] = h
		return h, nil
	}
	changed := map[Key]bool{}
	replaced := 0
	var added []Event
	for _, e := range events {
		us := e.Time.UnixMicro()
		if s.legacy.Load() && us%1_000_000 != 0 {
			// The same transition recorded before migration 5, at its whole
			// second: this twin, which knows its microsecond, replaces it.
			res, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM compliance_events WHERE seq IS NULL AND policy = ? AND template = ? AND cluster = ? AND time_us = ? AND state = ? AND message = ?`),
				e.Policy, e.Template, e.Cluster, us-us%1_000_000, string(e.State), e.Message)
			if err != nil {
				return 0, fmt.Errorf("%s: record %s/%s on %s: %w", s.name, e.Policy, e.Template, e.Cluster, err)
			}
			n, _ := res.RowsAffected()
			replaced += int(n)
		}
		prev, err := seriesHead(e.Key())
		if err != nil {
			return 0, err
		}
		e.Seq = seq + 1
		hash := EventHash(prev, e)
		res, err := insert.ExecContext(ctx, e.Policy, e.Template, e.Cluster, string(e.State), e.Message, us, e.Seq, prev, hash)
		if err != nil {
			return 0, fmt.Errorf("%s: record %s/%s on %s: %w", s.name, e.Policy, e.Template, e.Cluster, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("%s: record: %w", s.name, err)
		}
		if n == 0 {
			continue // recorded before
		}
		seq, head = e.Seq, FoldHead(head, e.Seq, hash)
		heads[e.Key()], changed[e.Key()] = hash, true
		added = append(added, e)
	}
	if len(added) == 0 && replaced == 0 {
		return 0, nil // the rollback undoes the count
	}
	for k := range changed {
		if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE compliance_series SET head = ? WHERE policy = ? AND cluster = ? AND template = ?`), heads[k], k.Policy, k.Cluster, k.Template); err != nil {
			return 0, fmt.Errorf("%s: record the series %s/%s on %s: %w", s.name, k.Policy, k.Template, k.Cluster, err)
		}
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE compliance_writes SET seq = ?, head = ?, legacy = legacy - ? WHERE id = 1`), seq, head, replaced); err != nil {
		return 0, fmt.Errorf("%s: record the chain head: %w", s.name, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("%s: record: %w", s.name, err)
	}
	if replaced > 0 {
		s.cache.invalidate()
	} else {
		s.cache.recorded(added, writes)
	}
	return len(added), nil
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
	query := `SELECT policy, template, cluster, state, message, time_us, seq FROM compliance_events` + where +
		" ORDER BY time_us, policy, template, cluster, " + seqOrder + ", state, message"
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
		var seq sql.NullInt64
		if err := rows.Scan(&policy, &template, &cluster, &state, &message, &us, &seq); err != nil {
			return nil, fmt.Errorf("%s: read events: %w", s.name, err)
		}
		out = append(out, Event{Policy: in.get(policy), Template: in.get(template), Cluster: in.get(cluster),
			State: compliance.State(in.get(state)), Message: in.get(message), Time: time.UnixMicro(us).UTC(), Seq: seq.Int64})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: read events: %w", s.name, err)
	}
	return out, nil
}

// seqOrder orders by Seq, the events recorded before migration 5 (no Seq)
// first among equal times.
const seqOrder = "COALESCE(seq, 0)"

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
	stmt, err := tx.PrepareContext(ctx, s.rebind(`SELECT template, state, message, time_us, seq FROM compliance_events
		WHERE policy = ? AND cluster = ? AND time_us < ? ORDER BY time_us DESC, COALESCE(seq, 0) DESC, state DESC, message DESC`))
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
			var seq sql.NullInt64
			if err := rows.Scan(&e.Template, &state, &e.Message, &t, &seq); err != nil {
				rows.Close()
				return nil, fmt.Errorf("%s: read latest events: %w", s.name, err)
			}
			if seen[e.Template] {
				continue
			}
			seen[e.Template] = true
			e.State, e.Time, e.Seq = compliance.State(state), time.UnixMicro(t).UTC(), seq.Int64
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

// Prune deletes, of each series, the events recorded before the first one
// it keeps: the newest event (in Events' order) and those from before on are
// kept, and so is every event recorded after one kept, so that a series' hash
// chain loses only its beginning (its anchor becomes the hash of the last
// event deleted). Events recorded before migration 5 go by the old rule:
// older than before and not the newest of their series.
func (s *sqlStore) Prune(ctx context.Context, before time.Time) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("%s: prune: %w", s.name, err)
	}
	defer func() { _ = tx.Rollback() }()
	var writes, seq int64
	var head string
	if err := tx.QueryRowContext(ctx, `UPDATE compliance_writes SET n = n + 1 WHERE id = 1 RETURNING n, seq, head`).Scan(&writes, &seq, &head); err != nil {
		return 0, fmt.Errorf("%s: count the write: %w", s.name, err)
	}
	bus := before.UTC().UnixMicro()
	res, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM compliance_events WHERE seq IS NULL AND time_us < ? AND time_us < (
		SELECT MAX(n.time_us) FROM compliance_events n
		WHERE n.policy = compliance_events.policy AND n.template = compliance_events.template AND n.cluster = compliance_events.cluster)`), bus)
	if err != nil {
		return 0, fmt.Errorf("%s: prune events before %s: %w", s.name, before.UTC().Format(time.RFC3339), err)
	}
	legacy, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: prune: %w", s.name, err)
	}
	// The series with a chained event older than before.
	var old []Key
	rows, err := tx.QueryContext(ctx, s.rebind(`SELECT DISTINCT policy, template, cluster FROM compliance_events WHERE seq IS NOT NULL AND time_us < ?`), bus)
	if err != nil {
		return 0, fmt.Errorf("%s: prune: %w", s.name, err)
	}
	for rows.Next() {
		var k Key
		if err := rows.Scan(&k.Policy, &k.Template, &k.Cluster); err != nil {
			rows.Close()
			return 0, fmt.Errorf("%s: prune: %w", s.name, err)
		}
		old = append(old, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("%s: prune: %w", s.name, err)
	}
	deleted := int(legacy)
	for _, k := range old {
		n, err := s.pruneSeries(ctx, tx, k, bus)
		if err != nil {
			return 0, err
		}
		deleted += n
	}
	if deleted == 0 {
		return 0, nil // the rollback undoes the count
	}
	head = foldPrune(head, before, deleted)
	if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE compliance_writes SET head = ?, base_seq = ?, base_head = ?, legacy = legacy - ? WHERE id = 1`), head, seq, head, legacy); err != nil {
		return 0, fmt.Errorf("%s: prune: record the chain head: %w", s.name, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("%s: prune: %w", s.name, err)
	}
	s.cache.invalidate()
	return deleted, nil
}

// pruneSeries deletes the chained events of series k recorded before the
// first one kept (see Prune) and moves its anchor.
func (s *sqlStore) pruneSeries(ctx context.Context, tx *sql.Tx, k Key, beforeUS int64) (int, error) {
	type row struct {
		us, seq int64
		hash    string
	}
	rows, err := tx.QueryContext(ctx, s.rebind(`SELECT time_us, seq, hash FROM compliance_events
		WHERE policy = ? AND template = ? AND cluster = ? AND seq IS NOT NULL ORDER BY seq`), k.Policy, k.Template, k.Cluster)
	if err != nil {
		return 0, fmt.Errorf("%s: prune %s/%s on %s: %w", s.name, k.Policy, k.Template, k.Cluster, err)
	}
	var chain []row
	newest := -1
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.us, &r.seq, &r.hash); err != nil {
			rows.Close()
			return 0, fmt.Errorf("%s: prune: %w", s.name, err)
		}
		chain = append(chain, r)
		if n := len(chain) - 1; newest < 0 || r.us >= chain[newest].us { // later Seq wins a tie
			newest = n
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("%s: prune: %w", s.name, err)
	}
	cut := 0 // chain[:cut] goes
	for cut < len(chain) && cut != newest && chain[cut].us < beforeUS {
		cut++
	}
	if cut == 0 {
		return 0, nil
	}
	last := chain[cut-1]
	if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM compliance_events WHERE policy = ? AND template = ? AND cluster = ? AND seq <= ?`),
		k.Policy, k.Template, k.Cluster, last.seq); err != nil {
		return 0, fmt.Errorf("%s: prune %s/%s on %s: %w", s.name, k.Policy, k.Template, k.Cluster, err)
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE compliance_series SET anchor = ? WHERE policy = ? AND cluster = ? AND template = ?`),
		last.hash, k.Policy, k.Cluster, k.Template); err != nil {
		return 0, fmt.Errorf("%s: prune %s/%s on %s: %w", s.name, k.Policy, k.Template, k.Cluster, err)
	}
	return cut, nil
}
