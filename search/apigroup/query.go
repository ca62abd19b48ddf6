package apigroup

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"flotilla.dev/flotilla/search/index"
)

// ClusterLabel is the pseudo-label that selects clusters by name in a
// labelSelector (kubectl get pods -A -l search.flotilla.dev/cluster=eu-1),
// and the annotation each object found carries with its cluster's name.
const ClusterLabel = "search.flotilla.dev/cluster"

// Field selectors searched, each with "=" or "==".
const (
	FieldName      = "metadata.name"
	FieldNamespace = "metadata.namespace"
	FieldPhase     = "status.phase"
	FieldReady     = "status.ready"
	FieldReason    = "status.reason"
	FieldImage     = "image"
	FieldOwner     = "owner"
)

// search is a list request's filters before authorization.
type search struct {
	index.Query
	// ClusterNames and ClusterSelector filter the clusters; the user's
	// rights filter them further.
	ClusterNames    []string
	ClusterSelector labels.Selector
	// Table is true when the caller asked for a Table (kubectl get).
	Table bool
	// FullObjects in a Table's rows (includeObject=Object); default
	// metadata only.
	FullObjects bool
	// Nothing is set when the filters contradict each other (two names in
	// a field selector): the search finds nothing.
	Nothing bool
}

// ignored are the list parameters of the Kubernetes API that a search
// accepts and does not need.
var ignored = map[string]bool{"resourceVersion": true, "resourceVersionMatch": true, "timeoutSeconds": true, "timeout": true, "pretty": true, "allowWatchBookmarks": true, "sendInitialEvents": true}

// parseQuery reads a list request's parameters: Kubernetes' labelSelector
// (with the pseudo-label ClusterLabel), fieldSelector (the fields above),
// limit and continue, includeObject; and the search's own, for
// `kubectl get --raw` and the CLI: cluster (repeatable, or comma
// separated), clusterSelector, namePrefix, image, owner, phase, reason,
// ready.
func parseQuery(v url.Values) (search, error) {
	var s search
	fail := func(format string, a ...any) (search, error) {
		return search{}, fmt.Errorf("%w: %s", index.ErrBadQuery, fmt.Sprintf(format, a...))
	}
	one := func(k string) (string, error) {
		if len(v[k]) > 1 {
			return "", fmt.Errorf("%w: parameter %s is given %d times", index.ErrBadQuery, k, len(v[k]))
		}
		return v.Get(k), nil
	}
	for k := range v {
		switch k {
		case "labelSelector", "fieldSelector", "limit", "continue", "includeObject", "cluster", "clusterSelector", "namePrefix", "image", "owner", "phase", "reason", "ready":
		case "watch":
			return fail("watch is not supported: a search answers lists")
		default:
			if !ignored[k] {
				return fail("parameter %q is not known (labelSelector, fieldSelector, limit, continue, cluster, clusterSelector, namePrefix, image, owner, phase, reason, ready)", k)
			}
		}
	}
	if v.Get("watch") == "true" || v.Get("watch") == "1" {
		return fail("watch is not supported: a search answers lists")
	}
	strs := map[string]*string{"continue": &s.Continue, "namePrefix": &s.NamePrefix, "image": &s.Image, "owner": &s.Owner, "phase": &s.Phase, "reason": &s.Reason, "ready": &s.Ready}
	for k, p := range strs {
		val, err := one(k)
		if err != nil {
			return search{}, err
		}
		*p = val
	}
	if l, err := one("limit"); err != nil {
		return search{}, err
	} else if l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return fail("limit %q is not a number of objects", l)
		}
		s.Limit = min(n, index.MaxLimit)
	}
	for _, c := range v["cluster"] {
		for _, name := range strings.Split(c, ",") {
			if name = strings.TrimSpace(name); name != "" {
				s.ClusterNames = append(s.ClusterNames, name)
			}
		}
	}
	if cs, err := one("clusterSelector"); err != nil {
		return search{}, err
	} else if cs != "" {
		sel, err := labels.Parse(cs)
		if err != nil {
			return fail("clusterSelector: %v", err)
		}
		s.ClusterSelector = sel
	}
	if ls, err := one("labelSelector"); err != nil {
		return search{}, err
	} else if ls != "" {
		sel, err := labels.Parse(ls)
		if err != nil {
			return fail("labelSelector: %v", err)
		}
		reqs, _ := sel.Requirements()
		rest := labels.NewSelector()
		for _, r := range reqs {
			if r.Key() != ClusterLabel {
				rest = rest.Add(r)
				continue
			}
			switch r.Operator() {
			case selection.Equals, selection.DoubleEquals, selection.In:
				names := r.Values().List()
				if len(s.ClusterNames) > 0 {
					// Both given: the clusters in both.
					names = slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(s.ClusterNames, n) })
					if len(names) == 0 {
						names = []string{""} // no cluster has no name: nothing is found
					}
				}
				s.ClusterNames = names
			default:
				return fail("labelSelector %s: select clusters with %s=<name> or %s in (<names>)", r.String(), ClusterLabel, ClusterLabel)
			}
		}
		if !rest.Empty() {
			s.Labels = rest
		}
	}
	if fs, err := one("fieldSelector"); err != nil {
		return search{}, err
	} else if fs != "" {
		sel, err := fields.ParseSelector(fs)
		if err != nil {
			return fail("fieldSelector: %v", err)
		}
		for _, r := range sel.Requirements() {
			if r.Operator != selection.Equals && r.Operator != selection.DoubleEquals {
				return fail("fieldSelector %s%s%s: only = is supported", r.Field, r.Operator, r.Value)
			}
			var p *string
			switch r.Field {
			case FieldName, FieldNamespace:
				// Requirements all hold (a field selector is an AND): a
				// second, different value leaves nothing to find.
				list := &s.Names
				if r.Field == FieldNamespace {
					list = &s.Namespaces
				}
				if len(*list) > 0 && (*list)[0] != r.Value {
					s.Nothing = true
				}
				*list = []string{r.Value}
				continue
			case FieldPhase:
				p = &s.Phase
			case FieldReady:
				p = &s.Ready
			case FieldReason:
				p = &s.Reason
			case FieldImage:
				p = &s.Image
			case FieldOwner:
				p = &s.Owner
			default:
				return fail("fieldSelector: field %q is not searched (%s, %s, %s, %s, %s, %s, %s)", r.Field, FieldName, FieldNamespace, FieldPhase, FieldReady, FieldReason, FieldImage, FieldOwner)
			}
			if *p != "" && *p != r.Value {
				return fail("fieldSelector: %s is given twice", r.Field)
			}
			*p = r.Value
		}
	}
	if s.Ready != "" && s.Ready != "true" && s.Ready != "false" {
		return fail("ready %q: say true or false", s.Ready)
	}
	switch inc := v.Get("includeObject"); inc {
	case "", "Metadata", "None":
	case "Object":
		s.FullObjects = true
	default:
		return fail("includeObject %q: say Object, Metadata or None", inc)
	}
	return s, nil
}

// wantsTable reports whether an Accept header asks for a meta.k8s.io Table
// (kubectl get asks for one first).
func wantsTable(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		params := strings.Split(part, ";")
		if strings.TrimSpace(params[0]) != "application/json" {
			continue
		}
		var as, g bool
		for _, p := range params[1:] {
			switch strings.TrimSpace(p) {
			case "as=Table":
				as = true
			case "g=meta.k8s.io":
				g = true
			}
		}
		if as && g {
			return true
		}
		if !as {
			return false // plain JSON preferred before any Table
		}
	}
	return false
}
