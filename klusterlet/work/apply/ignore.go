package apply

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"
	"k8s.io/client-go/util/jsonpath"
	workv1 "open-cluster-management.io/api/work/v1"
)

// jqTimeout bounds one jq path expression, so a hostile one cannot stall the
// agent.
const jqTimeout = time.Second

// IgnoreFieldError is a serverSideApply.ignoreFields entry that cannot be
// used (a malformed JSON pointer or jq expression). The manifest is not
// applied; its Applied condition has reason AppliedManifestSSAIgnoreFieldError.
type IgnoreFieldError struct{ Msg string }

func (e *IgnoreFieldError) Error() string { return e.Msg }

// Reason is the Applied condition's reason for this error.
func (e *IgnoreFieldError) Reason() string { return workv1.AppliedManifestSSAIgnoreFieldError }

// IgnoreFields splits a ServerSideApply config's ignoreFields by condition
// (an empty condition is OnSpokePresent, the CRD's default).
func IgnoreFields(cfg *workv1.ServerSideApplyConfig) (present, change []workv1.IgnoreField) {
	if cfg == nil {
		return nil, nil
	}
	for _, f := range cfg.IgnoreFields {
		if f.Condition == workv1.IgnoreFieldsConditionOnSpokeChange {
			change = append(change, f)
		} else {
			present = append(present, f)
		}
	}
	return present, change
}

// RemoveFields deletes from obj every field the entries name: jsonPaths
// (Kubernetes JSONPath; the last segment is a key deleted from each object
// its parent path finds, as OCM does), jsonPointers (RFC 6901) and
// jqPathExpressions (deleted with jq's del). A path that finds nothing is not
// an error.
func RemoveFields(ctx context.Context, obj map[string]interface{}, fields []workv1.IgnoreField) (map[string]interface{}, error) {
	for _, f := range fields {
		for _, p := range f.JSONPaths {
			if err := removeJSONPath(obj, p); err != nil {
				return nil, err
			}
		}
		for _, p := range f.JSONPointers {
			if err := removePointer(obj, p); err != nil {
				return nil, err
			}
		}
		for _, e := range f.JQPathExpressions {
			var err error
			if obj, err = removeJQ(ctx, obj, e); err != nil {
				return nil, err
			}
		}
	}
	return obj, nil
}

func removeJSONPath(obj map[string]interface{}, path string) error {
	path = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(path), "{"), "}"))
	i := strings.LastIndex(path, ".")
	if i < 0 || i == len(path)-1 {
		return &IgnoreFieldError{Msg: fmt.Sprintf("ignoreFields jsonPath %q must end in .<field>", path)}
	}
	parent, key := path[:i], path[i+1:]
	if parent == "" {
		delete(obj, key)
		return nil
	}
	finder := jsonpath.New("ignoreFields").AllowMissingKeys(true)
	if err := finder.Parse("{" + parent + "}"); err != nil {
		return &IgnoreFieldError{Msg: fmt.Sprintf("ignoreFields jsonPath %q: %v", path, err)}
	}
	results, err := finder.FindResults(obj)
	if err != nil {
		return nil // nothing there
	}
	for _, rs := range results {
		for _, r := range rs {
			if m, ok := r.Interface().(map[string]interface{}); ok {
				delete(m, key)
			}
		}
	}
	return nil
}

func removePointer(obj map[string]interface{}, pointer string) error {
	if pointer == "" || !strings.HasPrefix(pointer, "/") {
		return &IgnoreFieldError{Msg: fmt.Sprintf("ignoreFields jsonPointer %q must start with /", pointer)}
	}
	segs := strings.Split(pointer[1:], "/")
	for i := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(segs[i], "~1", "/"), "~0", "~")
	}
	var cur interface{} = obj
	for i, s := range segs {
		last := i == len(segs)-1
		switch c := cur.(type) {
		case map[string]interface{}:
			if last {
				delete(c, s)
				return nil
			}
			cur = c[s]
		case []interface{}:
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n >= len(c) {
				return nil
			}
			if last {
				// Removing an item from a list would need to rewrite its
				// parent; name the item's fields instead.
				return &IgnoreFieldError{Msg: fmt.Sprintf("ignoreFields jsonPointer %q points at a list item; point at a field of it", pointer)}
			}
			cur = c[n]
		default:
			return nil
		}
	}
	return nil
}

func removeJQ(ctx context.Context, obj map[string]interface{}, expr string) (map[string]interface{}, error) {
	q, err := gojq.Parse("del(" + expr + ")")
	if err != nil {
		return nil, &IgnoreFieldError{Msg: fmt.Sprintf("ignoreFields jqPathExpression %q: %v", expr, err)}
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, &IgnoreFieldError{Msg: fmt.Sprintf("ignoreFields jqPathExpression %q: %v", expr, err)}
	}
	ctx, cancel := context.WithTimeout(ctx, jqTimeout)
	defer cancel()
	v, ok := code.RunWithContext(ctx, normaliseNumbers(obj)).Next()
	if !ok {
		return obj, nil
	}
	if err, isErr := v.(error); isErr {
		return nil, &IgnoreFieldError{Msg: fmt.Sprintf("ignoreFields jqPathExpression %q: %v", expr, err)}
	}
	out, ok := v.(map[string]interface{})
	if !ok {
		return nil, &IgnoreFieldError{Msg: fmt.Sprintf("ignoreFields jqPathExpression %q did not leave an object", expr)}
	}
	return restoreNumbers(out), nil
}

// normaliseNumbers gives gojq the number types it knows (int, float64): an
// object decoded by Kubernetes holds int64.
func normaliseNumbers(v interface{}) interface{} {
	return mapNumbers(v, func(n interface{}) interface{} {
		if i, ok := n.(int64); ok {
			return int(i)
		}
		return n
	})
}

// restoreNumbers turns gojq's ints back into the int64 Kubernetes uses.
func restoreNumbers(m map[string]interface{}) map[string]interface{} {
	return mapNumbers(m, func(n interface{}) interface{} {
		if i, ok := n.(int); ok {
			return int64(i)
		}
		return n
	}).(map[string]interface{})
}

func mapNumbers(v interface{}, f func(interface{}) interface{}) interface{} {
	switch c := v.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(c))
		for k, e := range c {
			out[k] = mapNumbers(e, f)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(c))
		for i, e := range c {
			out[i] = mapNumbers(e, f)
		}
		return out
	default:
		return f(v)
	}
}

// restoreIgnored puts back into dst what removing the ignored fields took
// from live (live minus liveWithout), so an apply keeps their live values.
// Lists whose length removal changed are taken from live whole.
func restoreIgnored(dst, live, liveWithout interface{}) interface{} {
	switch l := live.(type) {
	case map[string]interface{}:
		lw, _ := liveWithout.(map[string]interface{})
		d, ok := dst.(map[string]interface{})
		if !ok {
			d = map[string]interface{}{}
		}
		for k, v := range l {
			wv, kept := lw[k]
			switch {
			case !kept:
				d[k] = v
			case isContainer(v):
				if dv, present := d[k]; present || changedBelow(v, wv) {
					d[k] = restoreIgnored(dv, v, wv)
				}
			}
		}
		return d
	case []interface{}:
		lw, _ := liveWithout.([]interface{})
		d, ok := dst.([]interface{})
		if !ok || len(lw) != len(l) || len(d) != len(l) {
			return l
		}
		for i := range l {
			d[i] = restoreIgnored(d[i], l[i], lw[i])
		}
		return d
	default:
		return dst
	}
}

func isContainer(v interface{}) bool {
	switch v.(type) {
	case map[string]interface{}, []interface{}:
		return true
	}
	return false
}

// changedBelow says removal took something from inside v.
func changedBelow(v, without interface{}) bool {
	switch c := v.(type) {
	case map[string]interface{}:
		w, _ := without.(map[string]interface{})
		if len(w) != len(c) {
			return true
		}
		for k, e := range c {
			if changedBelow(e, w[k]) {
				return true
			}
		}
	case []interface{}:
		w, _ := without.([]interface{})
		if len(w) != len(c) {
			return true
		}
		for i := range c {
			if changedBelow(c[i], w[i]) {
				return true
			}
		}
	}
	return false
}
