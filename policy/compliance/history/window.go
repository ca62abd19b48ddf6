package history

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"flotilla.dev/flotilla/policy/compliance"
)

// priorQuery reads, for every policy x cluster pair with an event the window
// selects (%s is the window's WHERE clause), the newest event before the
// window (the last in Events' order: time, then Seq) of each of the pair's
// templates, and when that event is NonCompliant, since when its series had
// been NonCompliant: the first NonCompliant event after the series' last
// event in another state, in Events' order. The pair's templates come from
// compliance_series; every other lookup is an index seek on the series'
// (policy, template, cluster, time_us, ...) key. The steps are MATERIALIZED
// so that no database evaluates a lookup twice. The pairs' range has an upper
// bound so that SQLite reads it on the time index. Events recorded before
// migration 5 (no Seq) order as Seq 0, then by state and message.
const priorQuery = `WITH pairs AS (
	SELECT DISTINCT policy, cluster FROM compliance_events%s AND time_us <= 9223372036854775807
), latest AS MATERIALIZED (
	SELECT s.policy, s.template, s.cluster, (SELECT MAX(e.time_us) FROM compliance_events e
		WHERE e.policy = s.policy AND e.template = s.template AND e.cluster = s.cluster AND e.time_us < ?) AS t
	FROM pairs p JOIN compliance_series s ON s.policy = p.policy AND s.cluster = p.cluster
), prior AS MATERIALIZED (
	SELECT l.policy, l.template, l.cluster, l.t, (SELECT COALESCE(e.seq, 0) FROM compliance_events e
		WHERE e.policy = l.policy AND e.template = l.template AND e.cluster = l.cluster AND e.time_us = l.t
		ORDER BY COALESCE(e.seq, 0) DESC, e.state DESC LIMIT 1) AS q, (SELECT e.state FROM compliance_events e
		WHERE e.policy = l.policy AND e.template = l.template AND e.cluster = l.cluster AND e.time_us = l.t
		ORDER BY COALESCE(e.seq, 0) DESC, e.state DESC LIMIT 1) AS state
	FROM latest l WHERE l.t IS NOT NULL
), other AS MATERIALIZED (
	SELECT p.policy, p.template, p.cluster, p.t, p.state, p.q,
		CASE WHEN p.state = 'NonCompliant' THEN (SELECT MAX(o.time_us) FROM compliance_events o
			WHERE o.policy = p.policy AND o.template = p.template AND o.cluster = p.cluster
			AND o.time_us < ? AND o.state <> 'NonCompliant') END AS other_us
	FROM prior p
), other2 AS MATERIALIZED (
	SELECT o.policy, o.template, o.cluster, o.t, o.state, o.q, o.other_us,
		CASE WHEN o.other_us IS NOT NULL THEN (SELECT MAX(COALESCE(y.seq, 0)) FROM compliance_events y
			WHERE y.policy = o.policy AND y.template = o.template AND y.cluster = o.cluster
			AND y.time_us = o.other_us AND y.state <> 'NonCompliant') END AS other_q
	FROM other o
)
SELECT x.policy, x.template, x.cluster, x.state,
	(SELECT e.message FROM compliance_events e
		WHERE e.policy = x.policy AND e.template = x.template AND e.cluster = x.cluster AND e.time_us = x.t AND e.state = x.state
		AND COALESCE(e.seq, 0) = x.q ORDER BY e.message DESC LIMIT 1),
	x.t, x.q,
	CASE WHEN x.state = 'NonCompliant' THEN (SELECT MIN(r.time_us) FROM compliance_events r
		WHERE r.policy = x.policy AND r.template = x.template AND r.cluster = x.cluster
		AND r.state = 'NonCompliant' AND r.time_us <= x.t
		AND (x.other_us IS NULL OR r.time_us > x.other_us OR (r.time_us = x.other_us AND COALESCE(r.seq, 0) > x.other_q))) END
FROM other2 x`

// Window reads the window's events and the events before it in one read
// transaction, so both see the same database. A window with only Since set
// (the live page's and the report's) comes from the store's window cache
// when it is current (cache.go): only what changed since the previous read is
// read then.
func (s *sqlStore) Window(ctx context.Context, q Query) (Window, error) {
	if !q.Since.IsZero() && q.Policy == "" && q.Template == "" && q.Cluster == "" {
		return s.cache.window(ctx, s, q.Since)
	}
	tx, err := s.db.BeginTx(ctx, s.readTx())
	if err != nil {
		return Window{}, fmt.Errorf("%s: read the window: %w", s.name, err)
	}
	defer func() { _ = tx.Rollback() }()
	return s.readWindow(ctx, tx, q)
}

// readWindow reads the window whole in tx.
func (s *sqlStore) readWindow(ctx context.Context, tx *sql.Tx, q Query) (Window, error) {
	where, args := q.where()
	var w Window
	var err error
	if w.Events, err = s.readEvents(ctx, tx, where, args); err != nil {
		return Window{}, err
	}
	if len(w.Events) == 0 || q.Since.IsZero() {
		return w, nil // nothing before the beginning
	}
	if w.Before, err = s.readPriors(ctx, tx, where, args, q.Since); err != nil {
		return Window{}, err
	}
	return w, nil
}

// readPriors runs priorQuery: the priors at since of the pairs with an event
// the WHERE clause selects.
func (s *sqlStore) readPriors(ctx context.Context, tx *sql.Tx, where string, args []any, since time.Time) ([]Prior, error) {
	us := since.UTC().UnixMicro()
	rows, err := tx.QueryContext(ctx, s.rebind(fmt.Sprintf(priorQuery, where)), append(args, us, us)...)
	if err != nil {
		return nil, fmt.Errorf("%s: read the events before the window: %w", s.name, err)
	}
	defer rows.Close()
	in := interner{}
	at := map[Key]int{}
	var out []Prior
	var policy, template, cluster, state, message sql.RawBytes
	for rows.Next() {
		var t, q int64
		var nc sql.NullInt64
		if err := rows.Scan(&policy, &template, &cluster, &state, &message, &t, &q, &nc); err != nil {
			return nil, fmt.Errorf("%s: read the events before the window: %w", s.name, err)
		}
		p := Prior{Event: Event{Policy: in.get(policy), Template: in.get(template), Cluster: in.get(cluster),
			State: compliance.State(in.get(state)), Message: in.get(message), Time: time.UnixMicro(t).UTC(), Seq: q}}
		if nc.Valid {
			p.NonCompliantSince = time.UnixMicro(nc.Int64).UTC()
		}
		if i, ok := at[p.Key()]; !ok {
			at[p.Key()] = len(out)
			out = append(out, p)
		} else if later(p.Event, out[i].Event) {
			out[i] = p
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: read the events before the window: %w", s.name, err)
	}
	return out, nil
}

// later reports whether a comes after b in Events' order within a series
// (time, Seq, then state and message for events without Seq).
func later(a, b Event) bool {
	switch {
	case !a.Time.Equal(b.Time):
		return a.Time.After(b.Time)
	case a.Seq != b.Seq:
		return a.Seq > b.Seq
	case a.State != b.State:
		return a.State > b.State
	}
	return a.Message > b.Message
}
