// Package index is the fleet search's store on the hub: every searched
// object of every cluster, with the columns searches filter on, in SQLite
// (the default, a file) or PostgreSQL (at scale), opened by internal/sqldb
// like the compliance history. Writes come from the clusters' search agents
// (search/apigroup checks who writes what); reads are Search and Versions.
package index

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"flotilla.dev/flotilla/internal/sqldb"
	"flotilla.dev/flotilla/search/object"
)

// Store is the index.
type Store struct {
	db     *sqldb.DB
	epoch  string
	limits atomic.Pointer[Limits]
	// beforeCommit, for tests, runs in Apply once its change is checked,
	// before it is committed.
	beforeCommit func()
}

// Limits bound what one cluster may keep in the index, so that no cluster
// (a compromised one among them) can fill the hub's database. Zero: no
// limit.
type Limits struct {
	// Objects a cluster may keep, all resources together.
	Objects int64
	// Bytes the index keeps for them: their stored JSON (after object.Fit)
	// and every copy of their columns, labels, images and reasons in the
	// tables and their indexes (storedSize).
	Bytes int64
}

// MaxResourcesPerCluster is the most resources one cluster may sync while
// Limits are set: each is a row (discovery), written by a change with no
// objects as well.
const MaxResourcesPerCluster = 500

// DefaultLimits are `flotilla hub`'s: far above a large cluster's
// searched objects (the 2-million-object benchmark's index holds about 2
// MiB on disk per 2,000-object cluster), low enough that one cluster
// cannot take over the database.
var DefaultLimits = Limits{Objects: 250_000, Bytes: 2 << 30}

// SetLimits sets the per-cluster limits Apply enforces from now on.
func (s *Store) SetLimits(l Limits) { s.limits.Store(&l) }

// ErrOverLimit marks a change refused because its cluster would keep more
// than Limits allow.
var ErrOverLimit = errors.New("over the search index's per-cluster limit")

// Usage is what a cluster keeps in the index.
type Usage struct{ Objects, Bytes int64 }

// Usage is what cluster keeps in the index now.
func (s *Store) Usage(ctx context.Context, cluster string) (Usage, error) {
	return s.usage(ctx, s.db, cluster)
}

func (s *Store) usage(ctx context.Context, db rowQuerier, cluster string) (Usage, error) {
	var u Usage
	if err := db.QueryRowContext(ctx, s.db.Rebind(`SELECT COUNT(*), COALESCE(SUM(size), 0) FROM search_objects WHERE cluster = ?`), cluster).Scan(&u.Objects, &u.Bytes); err != nil {
		return Usage{}, fmt.Errorf("%s: %w", s.db.Name, err)
	}
	return u, nil
}

// overLimit says why after, a cluster's usage once a change is written,
// breaks l where before did not already (a cluster above a lowered limit
// may still shrink); "" when it may be written.
func overLimit(l Limits, before, after Usage) string {
	switch {
	case l.Objects > 0 && after.Objects > l.Objects && after.Objects > before.Objects:
		return fmt.Sprintf("it would keep %d objects, the hub allows %d a cluster (flotilla hub --search-max-objects-per-cluster)", after.Objects, l.Objects)
	case l.Bytes > 0 && after.Bytes > l.Bytes && after.Bytes > before.Bytes:
		return fmt.Sprintf("its objects would take %d bytes, the hub allows %d a cluster (flotilla hub --search-max-bytes-per-cluster)", after.Bytes, l.Bytes)
	}
	return ""
}

// rowBytes is what storedSize charges a row, or an index entry, besides
// its columns: PostgreSQL's tuple header and item pointer, and the numbers.
const rowBytes = 32

// storedSize is the bytes an object takes in the index, what Limits.Bytes
// bounds: its JSON, and each copy of its text columns: its row and the
// indexes on it (primary key, search_objects_list, search_objects_name,
// search_objects_usage), then a row and two index entries for each label,
// image and reason. An agent chooses the columns (the images of a spec that
// Fit then cuts away, thousands of tiny labels, a long UID copied into each
// of their rows), so they are charged, not only the JSON.
func storedSize(cluster, gr, version, kind string, k object.Columns, raw []byte) int64 {
	n := func(ss ...string) int64 {
		t := int64(rowBytes)
		for _, s := range ss {
			t += int64(len(s))
		}
		return t
	}
	size := int64(len(raw)) +
		n(cluster, gr, k.UID, version, kind, k.Namespace, k.Name, k.ResourceVersion, k.Owner, k.Phase, joinBars(k.Reasons), k.Ready) +
		n(cluster, gr, k.UID) + n(gr, cluster, k.Namespace, k.Name, k.UID) + n(gr, k.Name) + n(cluster)
	for key, value := range k.Labels {
		size += n(cluster, gr, k.UID, key, value) + n(cluster, gr, k.UID, key) + n(gr, key, value)
	}
	for _, list := range [][]string{k.Images, k.Reasons} {
		for _, v := range list {
			size += n(cluster, gr, k.UID, v, k.Namespace, k.Name) + n(cluster, gr, k.UID, v) + n(gr, v, cluster, k.Namespace, k.Name, k.UID)
		}
	}
	return size
}

// checkResource refuses a resource whose names Kubernetes would not
// accept: they are stored (search_resources) and shown in discovery.
func checkResource(c Change) error {
	var errs []string
	if c.Resource.Group != "" {
		errs = append(errs, validation.IsDNS1123Subdomain(c.Resource.Group)...)
	}
	for _, name := range []string{c.Resource.Version, c.Resource.Resource, strings.ToLower(c.Kind)} {
		errs = append(errs, validation.IsDNS1123Label(name)...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: resource %.300q, kind %.100q: %s", ErrBadObject, c.Resource.String(), c.Kind, strings.Join(errs, "; "))
	}
	return nil
}

// Open opens the index db names: a postgres:// or postgresql:// URL, or a
// SQLite file path (created if needed); its schema is brought up to date.
func Open(ctx context.Context, db string) (*Store, error) {
	d, err := sqldb.Open(ctx, db, migrations)
	if err != nil {
		return nil, err
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	s := &Store{db: d}
	if _, err := d.ExecContext(ctx, d.Rebind(`INSERT INTO search_epoch (id, epoch) VALUES (1, ?) ON CONFLICT (id) DO NOTHING`), hex.EncodeToString(b[:])); err != nil {
		d.Close()
		return nil, fmt.Errorf("%s: %w", d.Name, err)
	}
	if err := d.QueryRowContext(ctx, `SELECT epoch FROM search_epoch WHERE id = 1`).Scan(&s.epoch); err != nil {
		d.Close()
		return nil, fmt.Errorf("%s: %w", d.Name, err)
	}
	return s, nil
}

// Epoch is the index's random name, kept for its life.
func (s *Store) Epoch() string { return s.epoch }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Name is the database, for messages (no password).
func (s *Store) Name() string { return s.db.Name }

// GR is a resource's key in the index: "pods", "deployments.apps".
func GR(gr schema.GroupResource) string { return gr.String() }

// Change is a write to one resource of one cluster.
type Change struct {
	Cluster string
	// Resource is the objects' resource; its version is the version they
	// are written in.
	Resource schema.GroupVersionResource
	// Kind of the objects.
	Kind string
	// Namespaced says whether the resource's objects live in namespaces.
	Namespaced bool
	// Upserts are objects to add or replace.
	Upserts []*unstructured.Unstructured
	// Deletes are UIDs of objects to remove.
	Deletes []string
	// Replace says Upserts are the resource's whole set: any other object of
	// the resource on the cluster is removed.
	Replace bool
}

// ErrBadObject marks a change's own mistake: an object that is not of its
// resource, or has no name or UID.
var ErrBadObject = errors.New("bad object")

// Apply writes c in one transaction and returns how many objects the index
// holds for the resource on the cluster afterwards. Each upsert is
// sanitized (object.Sanitize) and fitted (object.Fit) again, whoever sent
// it; one that is not of c's kind or has no name or UID fails the whole
// change, naming it. A change that would take the cluster past the
// Limits is not written (ErrOverLimit, saying which limit).
func (s *Store) Apply(ctx context.Context, c Change) (int, error) {
	if c.Cluster == "" || c.Resource.Resource == "" || c.Resource.Version == "" {
		return 0, errors.New("a change needs a cluster and a resource with its version")
	}
	if err := checkResource(c); err != nil {
		return 0, err
	}
	type row struct {
		cols object.Columns
		raw  []byte
		size int64
	}
	rows := make([]row, 0, len(c.Upserts))
	if c.Resource.GroupResource() == object.Secrets && c.Kind != object.SecretKind.Kind {
		// Sanitize knows Secrets by their kind: a Sync that names another
		// kind for them would keep their data.
		return 0, fmt.Errorf("%w: %s are of kind %s, not %q", ErrBadObject, object.Secrets, object.SecretKind.Kind, c.Kind)
	}
	apiVersion := c.Resource.GroupVersion().String()
	gr := GR(c.Resource.GroupResource())
	for i, u := range c.Upserts {
		if u.GetKind() != c.Kind || u.GetAPIVersion() != apiVersion {
			return 0, fmt.Errorf("%w: upserts[%d] is %s %s, not %s %s", ErrBadObject, i, u.GetAPIVersion(), u.GetKind(), apiVersion, c.Kind)
		}
		object.Sanitize(u)
		cols, err := object.Extract(u)
		if err != nil {
			return 0, fmt.Errorf("%w: upserts[%d]: %v", ErrBadObject, i, err)
		}
		raw, err := object.Fit(u)
		if err != nil {
			return 0, fmt.Errorf("%w: upserts[%d]: %v", ErrBadObject, i, err)
		}
		rows = append(rows, row{cols, raw, storedSize(c.Cluster, gr, c.Resource.Version, c.Kind, cols, raw)})
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", s.db.Name, err)
	}
	defer func() { _ = tx.Rollback() }()
	var limits Limits
	if l := s.limits.Load(); l != nil {
		limits = *l
	}
	limited := limits.Objects > 0 || limits.Bytes > 0
	if limited && s.db.Postgres {
		// Hub replicas sharing the database write one cluster's changes
		// one at a time (one replica's Syncs of a cluster already are,
		// apigroup): two changes checked each without the other's rows
		// would both be written past the limits.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(migrations.LockKey), c.Cluster); err != nil {
			return 0, fmt.Errorf("%s: lock cluster %s's usage: %w", s.db.Name, c.Cluster, err)
		}
	}
	if limited {
		if err := s.checkNewResource(ctx, tx, c.Cluster, gr); err != nil {
			return 0, err
		}
	}
	limited = limited && len(rows) > 0
	var before Usage
	if limited {
		if before, err = s.usage(ctx, tx, c.Cluster); err != nil {
			return 0, err
		}
	}
	if c.Replace {
		keep := map[string]bool{}
		for _, r := range rows {
			keep[r.cols.UID] = true
		}
		have, err := s.versions(ctx, tx, c.Cluster, gr)
		if err != nil {
			return 0, err
		}
		for uid := range have {
			if !keep[uid] {
				c.Deletes = append(c.Deletes, uid)
			}
		}
	}
	// Batched: a statement per table for many objects at once (a first
	// sync is thousands of objects; a statement each was most of its time).
	if err := s.deleteUIDs(ctx, tx, []string{"search_labels", "search_images", "search_reasons", "search_objects"}, c.Cluster, gr, c.Deletes); err != nil {
		return 0, err
	}
	rows = lastOfEachUID(rows, func(r row) string { return r.cols.UID })
	uids := make([]string, len(rows))
	objects := make([][]any, len(rows))
	var labels, reasons, images [][]any
	for i, r := range rows {
		k := r.cols
		uids[i] = k.UID
		objects[i] = []any{c.Cluster, gr, k.UID, c.Resource.Version, c.Kind, k.Namespace, k.Name, k.ResourceVersion, k.Owner,
			k.Created.UnixMicro(), k.Phase, joinBars(k.Reasons), k.Ready, k.ReadyReplicas, k.Replicas, string(r.raw), r.size}
		for key, value := range k.Labels {
			labels = append(labels, []any{c.Cluster, gr, k.UID, key, value})
		}
		for _, reason := range k.Reasons {
			reasons = append(reasons, []any{c.Cluster, gr, k.UID, reason, k.Namespace, k.Name})
		}
		for _, img := range k.Images {
			images = append(images, []any{c.Cluster, gr, k.UID, img, k.Namespace, k.Name})
		}
	}
	if err := s.insert(ctx, tx, `INSERT INTO search_objects (cluster, gr, uid, version, kind, namespace, name, rv, owner, created_us, phase, reasons, ready, ready_replicas, replicas, object, size)`,
		` ON CONFLICT (cluster, gr, uid) DO UPDATE SET version = excluded.version, kind = excluded.kind, namespace = excluded.namespace,
			name = excluded.name, rv = excluded.rv, owner = excluded.owner, created_us = excluded.created_us, phase = excluded.phase,
			reasons = excluded.reasons, ready = excluded.ready, ready_replicas = excluded.ready_replicas, replicas = excluded.replicas, object = excluded.object,
			size = excluded.size`, objects); err != nil {
		return 0, fmt.Errorf("store %s of %s: %w", c.Resource.GroupResource(), c.Cluster, err)
	}
	// An upserted object's labels, images and reasons are written anew.
	if err := s.deleteUIDs(ctx, tx, []string{"search_labels", "search_images", "search_reasons"}, c.Cluster, gr, uids); err != nil {
		return 0, err
	}
	for _, t := range []struct {
		insert string
		rows   [][]any
	}{
		{`INSERT INTO search_labels (cluster, gr, uid, key, value)`, labels},
		{`INSERT INTO search_reasons (cluster, gr, uid, reason, namespace, name)`, reasons},
		{`INSERT INTO search_images (cluster, gr, uid, image, namespace, name)`, images},
	} {
		if err := s.insert(ctx, tx, t.insert, "", t.rows); err != nil {
			return 0, err
		}
	}
	if _, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO search_resources (cluster, gr, grp, version, resource, kind, namespaced) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (cluster, gr) DO UPDATE SET grp = excluded.grp, version = excluded.version, resource = excluded.resource, kind = excluded.kind, namespaced = excluded.namespaced`),
		c.Cluster, gr, c.Resource.Group, c.Resource.Version, c.Resource.Resource, c.Kind, boolInt(c.Namespaced)); err != nil {
		return 0, fmt.Errorf("%s: %w", s.db.Name, err)
	}
	if limited {
		after, err := s.usage(ctx, tx, c.Cluster)
		if err != nil {
			return 0, err
		}
		if why := overLimit(limits, before, after); why != "" {
			return 0, fmt.Errorf("%w: %s of cluster %s not stored: %s", ErrOverLimit, c.Resource.GroupResource(), c.Cluster, why)
		}
	}
	if s.beforeCommit != nil {
		s.beforeCommit()
	}
	var n int
	if err := tx.QueryRowContext(ctx, s.db.Rebind(`SELECT COUNT(*) FROM search_objects WHERE cluster = ? AND gr = ?`), c.Cluster, gr).Scan(&n); err != nil {
		return 0, fmt.Errorf("%s: %w", s.db.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("%s: %w", s.db.Name, err)
	}
	return n, nil
}

// maxParams bounds the parameters of one statement (SQLite allows 32,766,
// PostgreSQL 65,535).
const maxParams = 30_000

// insert runs head VALUES (...), (...) tail for rows, as few statements as
// maxParams allows. Every row has the same number of columns.
func (s *Store) insert(ctx context.Context, tx execer, head, tail string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	group := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(rows[0])), ", ") + ")"
	per := max(1, maxParams/len(rows[0]))
	for len(rows) > 0 {
		n := min(per, len(rows))
		args := make([]any, 0, n*len(rows[0]))
		for _, r := range rows[:n] {
			args = append(args, r...)
		}
		q := head + " VALUES " + strings.TrimSuffix(strings.Repeat(group+", ", n), ", ") + tail
		if _, err := tx.ExecContext(ctx, s.db.Rebind(q), args...); err != nil {
			return fmt.Errorf("%s: %w", s.db.Name, err)
		}
		rows = rows[n:]
	}
	return nil
}

// checkNewResource refuses gr when cluster does not sync it yet and syncs
// MaxResourcesPerCluster resources already.
func (s *Store) checkNewResource(ctx context.Context, tx rowQuerier, cluster, gr string) error {
	var have, n int
	if err := tx.QueryRowContext(ctx, s.db.Rebind(`SELECT COUNT(*), COALESCE(SUM(CASE WHEN gr = ? THEN 1 ELSE 0 END), 0) FROM search_resources WHERE cluster = ?`), gr, cluster).Scan(&n, &have); err != nil {
		return fmt.Errorf("%s: %w", s.db.Name, err)
	}
	if have == 0 && n >= MaxResourcesPerCluster {
		return fmt.Errorf("%w: %s of cluster %s not stored: the cluster syncs %d resources already, the most the hub allows", ErrOverLimit, gr, cluster, n)
	}
	return nil
}

// deleteUIDs removes the rows of cluster's gr with uids from each table, in
// as few statements as maxParams allows.
func (s *Store) deleteUIDs(ctx context.Context, tx execer, tables []string, cluster, gr string, uids []string) error {
	for len(uids) > 0 {
		n := min(maxParams-2, len(uids))
		args := []any{cluster, gr}
		for _, u := range uids[:n] {
			args = append(args, u)
		}
		in := strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
		for _, table := range tables {
			if _, err := tx.ExecContext(ctx, s.db.Rebind(`DELETE FROM `+table+` WHERE cluster = ? AND gr = ? AND uid IN (`+in+`)`), args...); err != nil {
				return fmt.Errorf("%s: delete from %s: %w", s.db.Name, table, err)
			}
		}
		uids = uids[n:]
	}
	return nil
}

// lastOfEachUID keeps, of items with the same uid, the last (a later write
// of an object wins, as one statement each would have it), in order.
func lastOfEachUID[T any](items []T, uid func(T) string) []T {
	last := make(map[string]int, len(items))
	for i, it := range items {
		last[uid(it)] = i
	}
	if len(last) == len(items) {
		return items
	}
	out := make([]T, 0, len(last))
	for i, it := range items {
		if last[uid(it)] == i {
			out = append(out, it)
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Resource is a resource some cluster syncs.
type Resource struct {
	schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// Resources are the resources the clusters sync, each once, sorted by group
// and resource. Where clusters differ on a resource's version, kind or scope,
// the definition most of them sync wins (choose): one cluster, a compromised
// one among them, cannot redefine for everyone a resource the others sync.
func (s *Store) Resources(ctx context.Context) ([]Resource, error) {
	return s.resources(ctx, `SELECT grp, version, resource, kind, namespaced, COUNT(*) FROM search_resources
		GROUP BY grp, resource, version, kind, namespaced`)
}

// ResourcesIn are the resources clusters sync, as Resources (none for no
// cluster).
func (s *Store) ResourcesIn(ctx context.Context, clusters []string) ([]Resource, error) {
	if len(clusters) == 0 {
		return nil, nil
	}
	args := make([]any, len(clusters))
	for i, c := range clusters {
		args[i] = c
	}
	return s.resources(ctx, s.db.Rebind(`SELECT grp, version, resource, kind, namespaced, COUNT(*) FROM search_resources WHERE cluster IN (`+
		strings.TrimSuffix(strings.Repeat("?, ", len(clusters)), ", ")+`) GROUP BY grp, resource, version, kind, namespaced`), args...)
}

func (s *Store) resources(ctx context.Context, query string, args ...any) ([]Resource, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.db.Name, err)
	}
	defer rows.Close()
	var defs []Definition
	for rows.Next() {
		var d Definition
		var namespaced int
		if err := rows.Scan(&d.Group, &d.Version, &d.GroupVersionResource.Resource, &d.Kind, &namespaced, &d.Clusters); err != nil {
			return nil, fmt.Errorf("%s: %w", s.db.Name, err)
		}
		d.Namespaced = namespaced != 0
		defs = append(defs, d)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return choose(defs), nil
}

// A Definition is a resource as some clusters sync it.
type Definition struct {
	Resource
	// Clusters is how many clusters sync it so.
	Clusters int
}

var kubeVersion = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)

// choose keeps one definition of each resource, sorted by group and
// resource: the one the most clusters sync; on a tie a Kubernetes-style
// version (v1, v2beta1) before others, then the first version in order.
func choose(defs []Definition) []Resource {
	sort.SliceStable(defs, func(i, j int) bool {
		a, b := defs[i], defs[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.GroupVersionResource.Resource != b.GroupVersionResource.Resource {
			return a.GroupVersionResource.Resource < b.GroupVersionResource.Resource
		}
		if a.Clusters != b.Clusters {
			return a.Clusters > b.Clusters
		}
		if ka, kb := kubeVersion.MatchString(a.Version), kubeVersion.MatchString(b.Version); ka != kb {
			return ka
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Namespaced && !b.Namespaced
	})
	var out []Resource
	for i, d := range defs {
		if i > 0 && defs[i-1].GroupResource() == d.GroupResource() {
			continue
		}
		out = append(out, d.Resource)
	}
	return out
}

// joinBars is "|a|b|" (LIKE '%|a|%' finds a), or "" for none.
func joinBars(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return "|" + strings.Join(ss, "|") + "|"
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// delete removes the objects where holds, with their labels and images.
func (s *Store) delete(ctx context.Context, tx execer, where string, args ...any) error {
	for _, table := range []string{"search_labels", "search_images", "search_reasons", "search_objects"} {
		if _, err := tx.ExecContext(ctx, s.db.Rebind(`DELETE FROM `+table+` WHERE `+where), args...); err != nil {
			return fmt.Errorf("%s: delete from %s: %w", s.db.Name, table, err)
		}
	}
	return nil
}

// Versions maps the UID of each object the index holds for resource on
// cluster to its resourceVersion: what an agent's digest is compared with.
func (s *Store) Versions(ctx context.Context, cluster string, resource schema.GroupResource) (map[string]string, error) {
	return s.versions(ctx, s.db, cluster, GR(resource))
}

func (s *Store) versions(ctx context.Context, db querier, cluster, gr string) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, s.db.Rebind(`SELECT uid, rv FROM search_objects WHERE cluster = ? AND gr = ?`), cluster, gr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.db.Name, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var uid, rv string
		if err := rows.Scan(&uid, &rv); err != nil {
			return nil, fmt.Errorf("%s: %w", s.db.Name, err)
		}
		out[uid] = rv
	}
	return out, rows.Err()
}

// DeleteCluster removes every object of cluster.
func (s *Store) DeleteCluster(ctx context.Context, cluster string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", s.db.Name, err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := s.delete(ctx, tx, `cluster = ?`, cluster); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.db.Rebind(`DELETE FROM search_resources WHERE cluster = ?`), cluster); err != nil {
		return fmt.Errorf("%s: %w", s.db.Name, err)
	}
	return tx.Commit()
}

// Clusters are the clusters that synced a resource.
func (s *Store) Clusters(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT cluster FROM search_resources ORDER BY cluster`)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.db.Name, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// Stats are the index's size.
type Stats struct {
	Objects, Clusters int
}

// Stats counts the objects and clusters.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(DISTINCT cluster) FROM search_objects`).Scan(&st.Objects, &st.Clusters)
	if err != nil {
		return st, fmt.Errorf("%s: %w", s.db.Name, err)
	}
	return st, nil
}

// decode is an index row's object.
func decode(raw string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(raw), &u.Object); err != nil {
		return nil, err
	}
	return u, nil
}
