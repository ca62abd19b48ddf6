package history

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"flotilla.dev/flotilla/policy/compliance"
)

// The store is tamper-evident (NIST SP 800-53 AU-9, AU-10): every recorded
// event is chained to the one recorded before it in its series, and every
// event and prune is folded into the store's head.
//
//   - An event's hash is SHA-256 over the hash of the series' previous event
//     (in recording order; "" for the first), and the event's policy,
//     template, cluster, state, message, microsecond time and Seq, each
//     length-prefixed. compliance_events keeps it (hash) with the link it
//     was computed from (prev).
//   - compliance_series keeps each series' head (the hash of its last
//     event) and its anchor: the hash of the last event a prune deleted (""
//     when none), where the chain of what is left begins.
//   - compliance_writes keeps the store's head: starting from "", each
//     recorded event folds in as SHA-256(head, Seq, hash), and each prune as
//     SHA-256(head, "prune", before, deleted). base_seq and base_head are the
//     head after the last prune and the Seq then: the events recorded since
//     refold from base_head to head.
//
// Verify recomputes all of it: an edited event no longer matches its hash, a
// removed or inserted one breaks the link of the event after it (or its
// series' head, when it was the newest), and anything else the store's head.
// Someone who may write the database can recompute every hash; the head,
// which the OSCAL assessment results carry, is what tells a published report
// from a rewritten store.

// Head is a store's chain head.
type Head struct {
	// Hash is the store's head, hex ("" for an empty store).
	Hash string `json:"hash"`
	// Seq is the recording number of the last event recorded.
	Seq int64 `json:"seq"`
}

// Verification is what Verify found.
type Verification struct {
	// Events is the number of chained events checked.
	Events int `json:"events"`
	// Series is the number of series checked.
	Series int `json:"series"`
	// Unchained is the number of events recorded before the chain existed
	// (migration 5), which it cannot vouch for.
	Unchained int `json:"unchained"`
	// Head is the store's head checked.
	Head Head `json:"head"`
	// Base is the store's head just after the last prune (zero when none):
	// the heads Verify can look for are those after it; an older one
	// cannot be checked from what the store holds.
	Base Head `json:"base"`
	// Broken describes the first broken link (nil when the store is whole),
	// and BrokenLinks counts them all.
	Broken      *BrokenLink `json:"broken,omitempty"`
	BrokenLinks int         `json:"brokenLinks"`
	// Found maps each head Verify was asked about that the store's head
	// passed through (since the last prune) to the number of the event that
	// made it; a head not found is not there.
	Found map[string]int64 `json:"found,omitempty"`
}

// OK reports whether every link held.
func (v Verification) OK() bool { return v.BrokenLinks == 0 }

// BrokenLink names where a chain breaks.
type BrokenLink struct {
	Key
	// Seq and Time are the event's where the break shows (0 and zero when it
	// shows in a series' or the store's head).
	Seq  int64     `json:"seq,omitempty"`
	Time time.Time `json:"time,omitempty"`
	// Reason says what does not match and what that means.
	Reason string `json:"reason"`
}

func (b BrokenLink) String() string {
	where := "the store's head"
	if b.Policy != "" {
		where = fmt.Sprintf("series %s/%s on %s", b.Policy, b.Template, b.Cluster)
	}
	if b.Seq != 0 {
		where += fmt.Sprintf(", event %d (%s)", b.Seq, b.Time.UTC().Format(time.RFC3339Nano))
	}
	return where + ": " + b.Reason
}

// EventHash is the hash of e (its Seq set) chained to prev, the hash of the
// event recorded before it in its series ("" for the first). Record computes
// it; bulk loaders (a benchmark's COPY) that write the chain columns
// themselves call it too.
func EventHash(prev string, e Event) string {
	return hex.EncodeToString(sha(prev, e.Policy, e.Template, e.Cluster, string(e.State), e.Message,
		strconv.FormatInt(e.Time.UTC().UnixMicro(), 10), strconv.FormatInt(e.Seq, 10)))
}

// FoldHead is the store's head after an event numbered seq with hash was
// recorded on head.
func FoldHead(head string, seq int64, hash string) string {
	return hex.EncodeToString(sha(head, strconv.FormatInt(seq, 10), hash))
}

// foldPrune folds a prune into the store's head.
func foldPrune(head string, before time.Time, deleted int) string {
	return hex.EncodeToString(sha(head, "prune", strconv.FormatInt(before.UTC().UnixMicro(), 10), strconv.Itoa(deleted)))
}

func sha(parts ...string) []byte {
	h := sha256.New()
	for _, p := range parts {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return h.Sum(nil)
}

// Head reads the store's head.
func (s *sqlStore) Head(ctx context.Context) (Head, error) {
	var h Head
	if err := s.db.QueryRowContext(ctx, `SELECT head, seq FROM compliance_writes WHERE id = 1`).Scan(&h.Hash, &h.Seq); err != nil {
		return Head{}, fmt.Errorf("%s: read the chain head: %w", s.name, err)
	}
	return h, nil
}

// Verify walks every series in recording order, then the events since the
// last prune in Seq order, in one read transaction.
func (s *sqlStore) Verify(ctx context.Context, heads ...string) (Verification, error) {
	var v Verification
	want := map[string]bool{}
	for _, h := range heads {
		want[h] = true
	}
	tx, err := s.db.BeginTx(ctx, s.readTx())
	if err != nil {
		return v, fmt.Errorf("%s: verify: %w", s.name, err)
	}
	defer func() { _ = tx.Rollback() }()
	var baseSeq, legacy, chainFrom int64
	var baseHead string
	if err := tx.QueryRowContext(ctx, `SELECT head, seq, base_seq, base_head, legacy, chain_from_us FROM compliance_writes WHERE id = 1`).Scan(&v.Head.Hash, &v.Head.Seq, &baseSeq, &baseHead, &legacy, &chainFrom); err != nil {
		return v, fmt.Errorf("%s: verify: read the chain head: %w", s.name, err)
	}
	v.Base = Head{Hash: baseHead, Seq: baseSeq}
	broken := func(b BrokenLink) {
		v.BrokenLinks++
		if v.Broken == nil {
			v.Broken = &b
		}
	}
	// The unchained events (recorded before migration 5) cannot be vouched
	// for, but they are counted and none is newer than the chain's start:
	// one added since is told.
	var newest sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), MAX(time_us) FROM compliance_events WHERE seq IS NULL`).Scan(&v.Unchained, &newest); err != nil {
		return v, fmt.Errorf("%s: verify: %w", s.name, err)
	}
	if int64(v.Unchained) != legacy {
		broken(BrokenLink{Reason: fmt.Sprintf("%d unchained events (recorded before the chain) where the store counts %d: unchained rows were added or removed behind its back", v.Unchained, legacy)})
	}
	if newest.Valid && newest.Int64 > chainFrom {
		broken(BrokenLink{Time: time.UnixMicro(newest.Int64).UTC(), Reason: "an unchained event newer than the chain's start: it was inserted"})
	}

	// The series: heads and anchors.
	type ends struct{ head, anchor string }
	series := map[Key]ends{}
	rows, err := tx.QueryContext(ctx, `SELECT policy, template, cluster, head, anchor FROM compliance_series`)
	if err != nil {
		return v, fmt.Errorf("%s: verify: read the series: %w", s.name, err)
	}
	for rows.Next() {
		var k Key
		var e ends
		if err := rows.Scan(&k.Policy, &k.Template, &k.Cluster, &e.head, &e.anchor); err != nil {
			rows.Close()
			return v, fmt.Errorf("%s: verify: read the series: %w", s.name, err)
		}
		series[k] = e
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return v, fmt.Errorf("%s: verify: read the series: %w", s.name, err)
	}
	v.Series = len(series)

	// Each series' chain in recording order.
	rows, err = tx.QueryContext(ctx, `SELECT policy, template, cluster, state, message, time_us, seq, prev, hash FROM compliance_events
		WHERE seq IS NOT NULL ORDER BY policy, template, cluster, seq`)
	if err != nil {
		return v, fmt.Errorf("%s: verify: read the events: %w", s.name, err)
	}
	var cur Key
	var expect string
	walking := false
	done := map[Key]bool{}
	endSeries := func() {
		if walking && expect != series[cur].head {
			broken(BrokenLink{Key: cur, Reason: "the series' head is not the hash of its newest event: its newest event(s) were removed, or the head was changed"})
		}
	}
	in := interner{}
	for rows.Next() {
		var e Event
		var state string
		var us int64
		var prev, hash string
		if err := rows.Scan(&e.Policy, &e.Template, &e.Cluster, &state, &e.Message, &us, &e.Seq, &prev, &hash); err != nil {
			rows.Close()
			return v, fmt.Errorf("%s: verify: read the events: %w", s.name, err)
		}
		e.Policy, e.Template, e.Cluster = in.get([]byte(e.Policy)), in.get([]byte(e.Template)), in.get([]byte(e.Cluster))
		e.State, e.Time = compliance.State(state), time.UnixMicro(us).UTC()
		v.Events++
		if k := e.Key(); !walking || k != cur {
			endSeries()
			cur, walking = k, true
			done[k] = true
			ends, ok := series[k]
			if !ok {
				broken(BrokenLink{Key: k, Seq: e.Seq, Time: e.Time, Reason: "the event belongs to no recorded series: it was inserted"})
			}
			expect = ends.anchor
		}
		switch {
		case prev != expect:
			broken(BrokenLink{Key: e.Key(), Seq: e.Seq, Time: e.Time, Reason: "its link is not the hash of the event recorded before it in its series: an event before it was removed or inserted (or this one was)"})
		case EventHash(prev, e) != hash:
			broken(BrokenLink{Key: e.Key(), Seq: e.Seq, Time: e.Time, Reason: "its content does not match its hash: it was changed"})
		}
		expect = hash
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return v, fmt.Errorf("%s: verify: read the events: %w", s.name, err)
	}
	endSeries()
	for k, e := range series {
		if !done[k] && e.head != e.anchor {
			broken(BrokenLink{Key: k, Reason: "the series has a head but none of its events: they were removed"})
		}
	}

	// The store's head over the events since the last prune.
	rows, err = tx.QueryContext(ctx, s.rebind(`SELECT seq, hash FROM compliance_events WHERE seq > ? ORDER BY seq`), baseSeq)
	if err != nil {
		return v, fmt.Errorf("%s: verify: read the events: %w", s.name, err)
	}
	head, last := baseHead, baseSeq
	found := func() {
		if want[head] {
			if v.Found == nil {
				v.Found = map[string]int64{}
			}
			v.Found[head] = last
		}
	}
	for rows.Next() {
		var seq int64
		var hash string
		if err := rows.Scan(&seq, &hash); err != nil {
			rows.Close()
			return v, fmt.Errorf("%s: verify: read the events: %w", s.name, err)
		}
		head, last = FoldHead(head, seq, hash), seq
		found()
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return v, fmt.Errorf("%s: verify: read the events: %w", s.name, err)
	}
	if head != v.Head.Hash || last != v.Head.Seq {
		broken(BrokenLink{Reason: fmt.Sprintf("the events since the last prune (numbers %d to %d) do not fold into the store's head (%d): an event was removed, inserted or renumbered, or the head was changed", baseSeq+1, last, v.Head.Seq)})
	}
	return v, nil
}
