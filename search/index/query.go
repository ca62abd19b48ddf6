package index

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
)

// MaxLimit is the most objects one page holds.
const MaxLimit = 5000

// MaxPageBytes bounds the stored JSON of one page's objects: a page ends
// before the object that would pass it (the first object always fits), so
// that a search of big objects (up to object.MaxBytes each) costs the hub a
// bounded memory, whatever the limit asked.
const MaxPageBytes = 8 << 20

// Query is a search of one resource. Every filter given must hold.
type Query struct {
	// Resource is the group and resource searched. Required.
	Resource schema.GroupResource
	// AllClusters searches every cluster; otherwise only Clusters (none:
	// nothing is found).
	AllClusters bool
	Clusters    []string
	// Namespaces, when given, are the namespaces searched ("" is the
	// cluster-scoped objects).
	Namespaces []string
	// Names are exact names; NamePrefix a prefix of the name.
	Names      []string
	NamePrefix string
	// Labels selects by label (nil: every object). Gt and Lt are refused.
	Labels labels.Selector
	// Owner is the controller owner, "Kind/name".
	Owner string
	// Image is a container image, exactly as written in the spec.
	Image string
	// Phase is status.phase; Reason a container state reason of a Pod
	// (CrashLoopBackOff...); Ready "true" or "false".
	Phase, Reason, Ready string
	// Limit is the page size, 1 to MaxLimit. Default (0) MaxLimit. A page
	// also ends before MaxPageBytes of objects.
	Limit int
	// Continue is the token of the previous page.
	Continue string
}

// Hit is one object found.
type Hit struct {
	Cluster string
	Object  *unstructured.Unstructured
}

// Page is a page of hits in the order cluster, namespace, name, UID.
type Page struct {
	Items []Hit
	// Continue is the token of the next page, "" on the last.
	Continue string
}

// position is where a page ends: the continue token's content.
type position struct {
	Cluster   string `json:"c"`
	Namespace string `json:"n"`
	Name      string `json:"m"`
	UID       string `json:"u"`
}

// ErrBadQuery marks a query's own mistake (the API answers 400).
var ErrBadQuery = errors.New("bad query")

// Where is q's WHERE clause over search_objects (aliased o) and its
// arguments, with "?" placeholders; the limit is apart.
func (q Query) Where() (string, []any, error) {
	if q.Resource.Resource == "" {
		return "", nil, fmt.Errorf("%w: no resource", ErrBadQuery)
	}
	w := []string{"o.gr = ?"}
	args := []any{GR(q.Resource)}
	if from, _ := q.From(); from != driveObjects {
		w = append(w, "d.gr = ?")
		args = append(args, GR(q.Resource))
	}
	in := func(col string, vals []string) {
		w = append(w, col+" IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(vals)), ", ")+")")
		for _, v := range vals {
			args = append(args, v)
		}
	}
	if !q.AllClusters {
		if len(q.Clusters) == 0 {
			w = append(w, "1 = 0")
		} else {
			in("o.cluster", q.Clusters)
		}
	}
	if len(q.Namespaces) > 0 {
		in("o.namespace", q.Namespaces)
	}
	if len(q.Names) > 0 {
		in("o.name", q.Names)
	}
	if q.NamePrefix != "" {
		// Compared as a range, not with LIKE: a name's "_" or "%" would be
		// a pattern, and the range uses the (gr, name) index.
		w = append(w, "o.name >= ? AND o.name < ?")
		args = append(args, q.NamePrefix, q.NamePrefix+"\U0010FFFF")
	}
	for col, v := range map[string]string{"o.owner": q.Owner, "o.phase": q.Phase, "o.ready": q.Ready} {
		if v != "" {
			w = append(w, col+" = ?")
			args = append(args, v)
		}
	}
	// An image or a reason drives the search (From): its table's index
	// holds the page's order, so the first page is read in order, not
	// sorted out of every hit. The other one, when both are asked, is a
	// condition.
	from, _ := q.From()
	for _, f := range []struct{ value, drives, table, column string }{
		{q.Image, driveImages, "search_images", "image"},
		{q.Reason, driveReasons, "search_reasons", "reason"},
	} {
		switch {
		case f.value == "":
		case from == f.drives:
			w = append(w, "d."+f.column+" = ?")
			args = append(args, f.value)
		default:
			w = append(w, "(o.cluster, o.gr, o.uid) IN (SELECT x.cluster, x.gr, x.uid FROM "+f.table+" x WHERE x.gr = ? AND x."+f.column+" = ?)")
			args = append(args, GR(q.Resource), f.value)
		}
	}
	if q.Labels != nil {
		reqs, _ := q.Labels.Requirements()
		for _, r := range reqs {
			cond, a, err := labelCondition(GR(q.Resource), r)
			if err != nil {
				return "", nil, err
			}
			w = append(w, cond)
			args = append(args, a...)
		}
	}
	if q.Continue != "" {
		p, err := decodeContinue(q.Continue)
		if err != nil {
			return "", nil, err
		}
		_, order := q.From()
		w = append(w, "("+order+") > (?, ?, ?, ?)")
		args = append(args, p.Cluster, p.Namespace, p.Name, p.UID)
	}
	return strings.Join(w, " AND "), args, nil
}

const (
	driveObjects = "search_objects o"
	driveImages  = "search_images d JOIN search_objects o ON o.cluster = d.cluster AND o.gr = d.gr AND o.uid = d.uid"
	driveReasons = "search_reasons d JOIN search_objects o ON o.cluster = d.cluster AND o.gr = d.gr AND o.uid = d.uid"
)

// From is what q reads (its FROM clause: the objects, or an image's or a
// reason's rows joined to their objects) and the columns of its order.
func (q Query) From() (from, order string) {
	switch {
	case q.Image != "":
		return driveImages, "d.cluster, d.namespace, d.name, d.uid"
	case q.Reason != "":
		return driveReasons, "d.cluster, d.namespace, d.name, d.uid"
	default:
		return driveObjects, "o.cluster, o.namespace, o.name, o.uid"
	}
}

const hasLabel = "EXISTS (SELECT 1 FROM search_labels l WHERE l.cluster = o.cluster AND l.gr = o.gr AND l.uid = o.uid AND l.key = ?"

// withLabel selects the objects of a resource that have a label, driven
// from the label table's (gr, key, value) index.
const withLabel = "(o.cluster, o.gr, o.uid) IN (SELECT l.cluster, l.gr, l.uid FROM search_labels l WHERE l.gr = ? AND l.key = ?"

// labelCondition is one label requirement on resource gr as SQL, with
// Kubernetes' semantics: != and notin also match objects without the key.
func labelCondition(gr string, r labels.Requirement) (string, []any, error) {
	vals := r.Values().List()
	valueIn := ""
	var valueArgs []any
	if len(vals) > 0 {
		valueIn = " AND l.value IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(vals)), ", ") + ")"
		for _, v := range vals {
			valueArgs = append(valueArgs, v)
		}
	}
	positive := append([]any{gr, r.Key()}, valueArgs...)
	negative := append([]any{r.Key()}, valueArgs...)
	switch r.Operator() {
	case selection.Equals, selection.DoubleEquals, selection.In:
		return withLabel + valueIn + ")", positive, nil
	case selection.NotEquals, selection.NotIn:
		return "NOT " + hasLabel + valueIn + ")", negative, nil
	case selection.Exists:
		return withLabel + ")", []any{gr, r.Key()}, nil
	case selection.DoesNotExist:
		return "NOT " + hasLabel + ")", []any{r.Key()}, nil
	default:
		return "", nil, fmt.Errorf("%w: label selector %q: operator %s is not supported (use =, !=, in, notin, exists, !key)", ErrBadQuery, r.String(), r.Operator())
	}
}

func decodeContinue(token string) (position, error) {
	var p position
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err == nil {
		err = json.Unmarshal(raw, &p)
	}
	if err != nil {
		return p, fmt.Errorf("%w: continue %q is not a token this server gave", ErrBadQuery, token)
	}
	return p, nil
}

func encodeContinue(p position) string {
	raw, _ := json.Marshal(p)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// Search runs q.
func (s *Store) Search(ctx context.Context, q Query) (Page, error) {
	if q.Limit < 0 || q.Limit > MaxLimit {
		return Page{}, fmt.Errorf("%w: limit %d is not between 1 and %d", ErrBadQuery, q.Limit, MaxLimit)
	}
	if q.Limit == 0 {
		q.Limit = MaxLimit
	}
	where, args, err := q.Where()
	if err != nil {
		return Page{}, err
	}
	from, order := q.From()
	stmt := s.db.Rebind(`SELECT o.cluster, o.namespace, o.name, o.uid, o.object FROM ` + from + ` WHERE ` + where +
		` ORDER BY ` + order + ` LIMIT ?`)
	rows, err := s.db.QueryContext(ctx, stmt, append(args, q.Limit+1)...)
	if err != nil {
		return Page{}, fmt.Errorf("%s: %w", s.db.Name, err)
	}
	defer rows.Close()
	var page Page
	var last position
	size := 0
	for rows.Next() {
		var p position
		var raw string
		if err := rows.Scan(&p.Cluster, &p.Namespace, &p.Name, &p.UID, &raw); err != nil {
			return Page{}, fmt.Errorf("%s: %w", s.db.Name, err)
		}
		if size += len(raw); len(page.Items) == q.Limit || (len(page.Items) > 0 && size > MaxPageBytes) {
			page.Continue = encodeContinue(last)
			break
		}
		u, err := decode(raw)
		if err != nil {
			return Page{}, fmt.Errorf("%s: object %s %s/%s of %s: %w", s.db.Name, q.Resource, p.Namespace, p.Name, p.Cluster, err)
		}
		page.Items = append(page.Items, Hit{Cluster: p.Cluster, Object: u})
		last = p
	}
	return page, rows.Err()
}
