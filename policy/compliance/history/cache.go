package history

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"time"

	"flotilla.dev/flotilla/policy/compliance"
)

// Limits of the window cache: beyond them it reads the window whole again.
const (
	// maxPending is the number of events recorded through the store that the
	// cache holds until the next window read merges them.
	maxPending = 200_000
	// maxPairReads is the number of pairs whose priors a window read looks up
	// one by one (pairs that gained their first event in the window since).
	maxPairReads = 2_000
)

// windowCache is a store's last window (Store.Window with only Since set):
// the events from its start (base) on and, for every policy x cluster pair
// among them, the newest event before base of each template. It is kept
// current without reading the database again:
//
//   - Record hands it the events it added (pending until the next read).
//     An event from base on joins the events; one before base becomes its
//     series' prior when it is later than the prior (a NonCompliant one
//     extends a NonCompliant prior's run); one earlier than the prior of a
//     NonCompliant series may move when the run began, so the cache forgets
//     that pair's priors and reads them again.
//   - A pair that gains its first event from base on has its priors read, a
//     query per pair.
//   - As the window's start moves forward (time passes), the events between
//     the old and the new start become the priors, walked in Events' order,
//     and the pairs with no event left drop out.
//
// The database's compliance_writes count (migration 4), read with every
// window, tells whether anything but this store's own Record wrote since (a
// second hub, Prune, a Record whose events are not merged yet): the cache
// then reads the window whole. So does a window starting before the cached
// one, or too much to catch up with (maxPending, maxPairReads).
type windowCache struct {
	mu     sync.Mutex
	valid  bool
	writes int64     // the compliance_writes count the cache reflects
	base   time.Time // the cached window's start
	// events are from base on, in Events' order. The slice is never written
	// in place (a caller may hold it).
	events []Event
	// priors holds, for every pair with events from base on whose priors
	// are known, its templates' newest events before base (none when it has
	// no event before base).
	priors map[PolicyCluster][]Prior
	// pending are the events Record added since the last read.
	pending []Event
}

// invalidate makes the next window read whole.
func (c *windowCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reset()
}

func (c *windowCache) reset() {
	c.valid, c.events, c.priors, c.pending = false, nil, nil, nil
}

// recorded takes the events a Record added in the write that made the count
// writes.
func (c *windowCache) recorded(added []Event, writes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !c.valid || writes <= c.writes: // nothing cached, or read after the write
	case writes == c.writes+1 && len(c.pending)+len(added) <= maxPending:
		c.pending = append(c.pending, added...)
		c.writes = writes
	default: // another write came between, or too much to hold
		c.reset()
	}
}

// window answers Store.Window for a query with only Since set.
func (c *windowCache) window(ctx context.Context, s *sqlStore, since time.Time) (Window, error) {
	since = time.UnixMicro(since.UTC().UnixMicro()).UTC() // the database's precision
	c.mu.Lock()
	defer c.mu.Unlock()
	tx, err := s.db.BeginTx(ctx, s.readTx())
	if err != nil {
		return Window{}, fmt.Errorf("%s: read the window: %w", s.name, err)
	}
	defer func() { _ = tx.Rollback() }()
	var writes int64
	if err := tx.QueryRowContext(ctx, `SELECT n FROM compliance_writes WHERE id = 1`).Scan(&writes); err != nil {
		return Window{}, fmt.Errorf("%s: read the write count: %w", s.name, err)
	}
	if c.valid && writes == c.writes && !since.Before(c.base) {
		ok, err := c.catchUp(ctx, s, tx, since)
		if err != nil {
			c.reset()
			return Window{}, err
		}
		if ok {
			return c.result(true), nil
		}
	}
	c.reset()
	w, err := s.readWindow(ctx, tx, Query{Since: since})
	if err != nil {
		return Window{}, err
	}
	c.valid, c.writes, c.base, c.events = true, writes, since, slices.Clip(w.Events)
	c.priors = map[PolicyCluster][]Prior{}
	for _, e := range w.Events {
		c.priors[PolicyCluster{e.Policy, e.Cluster}] = nil
	}
	for _, p := range w.Before {
		pc := PolicyCluster{p.Policy, p.Cluster}
		c.priors[pc] = append(c.priors[pc], p)
	}
	return c.result(false), nil
}

// result is the cached window. Events is shared (never written in place).
func (c *windowCache) result(incremental bool) Window {
	w := Window{Incremental: incremental}
	if len(c.events) == 0 {
		return w
	}
	w.Events = c.events
	n := 0
	for _, ps := range c.priors {
		n += len(ps)
	}
	w.Before = make([]Prior, 0, n)
	for _, ps := range c.priors {
		w.Before = append(w.Before, ps...)
	}
	return w
}

// catchUp merges the pending events, reads the priors of new pairs and
// moves the start to since. It reports false when reading the window whole
// is better.
func (c *windowCache) catchUp(ctx context.Context, s *sqlStore, tx *sql.Tx, since time.Time) (bool, error) {
	pending := c.pending
	c.pending = nil
	slices.SortFunc(pending, compareEvents)
	var inWindow []Event
	for _, e := range pending {
		if !e.Time.Before(c.base) {
			inWindow = append(inWindow, e)
			continue
		}
		pc := PolicyCluster{e.Policy, e.Cluster}
		ps, loaded := c.priors[pc]
		if !loaded {
			continue // read when (if) the pair gains an event in the window
		}
		i := slices.IndexFunc(ps, func(p Prior) bool { return p.Template == e.Template })
		switch {
		case i < 0:
			c.priors[pc] = append(slices.Clip(ps), advance(Prior{}, e))
		case later(e, ps[i].Event):
			ps[i] = advance(ps[i], e)
		case ps[i].State == compliance.NonCompliant:
			delete(c.priors, pc) // when its run began may have moved: read again
		}
	}
	if len(inWindow) > 0 {
		c.events = mergeEvents(c.events, inWindow)
	}
	// Pairs with events from since on whose priors are not known.
	start, _ := slices.BinarySearchFunc(c.events, since, func(e Event, t time.Time) int { return e.Time.Compare(t) })
	need := map[PolicyCluster]bool{}
	for _, e := range c.events[start:] {
		pc := PolicyCluster{e.Policy, e.Cluster}
		if _, loaded := c.priors[pc]; !loaded {
			need[pc] = true
		}
	}
	if len(need) > maxPairReads {
		return false, nil
	}
	for pc := range need {
		ps, err := s.readPriors(ctx, tx, " WHERE policy = ? AND cluster = ? AND time_us >= ?", []any{pc.Policy, pc.Cluster, c.base.UnixMicro()}, c.base)
		if err != nil {
			return false, err
		}
		c.priors[pc] = ps
	}
	if since.After(c.base) {
		c.moveTo(since, start)
	}
	return true, nil
}

// moveTo moves the window's start forward to since; events[start:] are the
// events from since on. The events before since become the priors of the
// pairs that keep events; the others drop out.
func (c *windowCache) moveTo(since time.Time, start int) {
	live := map[PolicyCluster]bool{}
	for _, e := range c.events[start:] {
		live[PolicyCluster{e.Policy, e.Cluster}] = true
	}
	for pc := range c.priors {
		if !live[pc] {
			delete(c.priors, pc)
		}
	}
	for _, e := range c.events[:start] {
		pc := PolicyCluster{e.Policy, e.Cluster}
		if !live[pc] {
			continue
		}
		ps := c.priors[pc]
		if i := slices.IndexFunc(ps, func(p Prior) bool { return p.Template == e.Template }); i >= 0 {
			ps[i] = advance(ps[i], e)
		} else {
			c.priors[pc] = append(slices.Clip(ps), advance(Prior{}, e))
		}
	}
	c.events = c.events[start:]
	c.base = since
}

// advance is a series' prior once e, the next event of the series in
// Events' order, happened (p is zero when the series had none).
func advance(p Prior, e Event) Prior {
	next := Prior{Event: e}
	if e.State == compliance.NonCompliant {
		next.NonCompliantSince = e.Time
		if p.State == compliance.NonCompliant {
			next.NonCompliantSince = p.NonCompliantSince
		}
	}
	return next
}

// compareEvents is Events' order: time, policy, template, cluster, Seq,
// state, message.
func compareEvents(a, b Event) int {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(a.Policy, b.Policy), cmp.Compare(a.Template, b.Template), cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Seq, b.Seq),
		cmp.Compare(a.State, b.State), cmp.Compare(a.Message, b.Message))
}

// mergeEvents merges two sorted lists into a new one.
func mergeEvents(a, b []Event) []Event {
	out := make([]Event, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if compareEvents(b[j], a[i]) < 0 {
			out = append(out, b[j])
			j++
		} else {
			out = append(out, a[i])
			i++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}
