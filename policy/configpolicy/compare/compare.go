package compare

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// Mode is how strictly a template must hold.
type Mode int

const (
	// MustHave: the live object holds at least the template's fields.
	MustHave Mode = iota
	// MustOnlyHave: the live object's maps and lists equal the template's.
	MustOnlyHave
)

func (m Mode) String() string {
	if m == MustOnlyHave {
		return "MustOnlyHave"
	}
	return "MustHave"
}

// Options says how to compare one template.
type Options struct {
	// Mode for every field but metadata labels and annotations. Default MustHave.
	Mode Mode
	// MetadataMode for metadata.labels and metadata.annotations. Default: Mode
	// (set MetadataModeSet to use MetadataMode instead).
	MetadataMode Mode
	// MetadataModeSet says MetadataMode was given. Default false.
	MetadataModeSet bool
}

// Result is the outcome of comparing a template with a live object.
type Result struct {
	// Match is true when the live object holds the template.
	Match bool
	// Mismatches are the paths (e.g. `spec.containers[name=web].image`) that
	// differ, sorted.
	Mismatches []string
	// StatusOnly is true when every mismatch is under status: enforce cannot
	// repair it.
	StatusOnly bool
	// Merged is the live object with the template applied (status untouched):
	// what enforce would write. It is a copy; the inputs are never modified.
	Merged map[string]any
}

// Object compares template with live. Both are unstructured objects
// (map[string]any from JSON or YAML).
func Object(template, live map[string]any, opts Options) Result {
	template = normalizeSecret(runtime.DeepCopyJSON(template))
	live = normalizeSecret(runtime.DeepCopyJSON(live))
	metaMode := opts.Mode
	if opts.MetadataModeSet {
		metaMode = opts.MetadataMode
	}
	merged := runtime.DeepCopyJSON(live)
	var diffs []string
	statusOnly := true
	for _, key := range sortedKeys(template) {
		want := template[key]
		switch key {
		case "apiVersion", "kind":
			continue
		case "metadata":
			wantMeta, _ := want.(map[string]any)
			liveMeta, _ := live["metadata"].(map[string]any)
			mergedMeta, _ := merged["metadata"].(map[string]any)
			if mergedMeta == nil {
				mergedMeta = map[string]any{}
				merged["metadata"] = mergedMeta
			}
			for _, mk := range []string{"labels", "annotations"} {
				w, ok := wantMeta[mk]
				if !ok {
					continue
				}
				m, d := value(w, liveMeta[mk], metaMode == MustOnlyHave, "metadata."+mk)
				setOrDelete(mergedMeta, mk, m)
				if len(d) > 0 {
					statusOnly = false
				}
				diffs = append(diffs, d...)
			}
		case "status":
			_, d := value(want, live[key], opts.Mode == MustOnlyHave, key)
			diffs = append(diffs, d...)
		default:
			m, d := value(want, live[key], opts.Mode == MustOnlyHave, key)
			setOrDelete(merged, key, m)
			if len(d) > 0 {
				statusOnly = false
			}
			diffs = append(diffs, d...)
		}
	}
	sort.Strings(diffs)
	r := Result{Match: len(diffs) == 0, Mismatches: diffs, Merged: merged}
	r.StatusOnly = !r.Match && statusOnly
	return r
}

// Matches reports whether live holds template (Object(...).Match).
func Matches(template, live map[string]any, opts Options) bool {
	return Object(template, live, opts).Match
}

func setOrDelete(m map[string]any, key string, v any) {
	if v == nil {
		delete(m, key)
		return
	}
	m[key] = v
}

// value compares want with have at path and returns the merged value (nil
// means: leave the key out) and the differing paths.
func value(want, have any, exact bool, path string) (any, []string) {
	if isEmpty(want) {
		if isEmpty(have) {
			return have, nil
		}
		if !exact {
			// An empty template value asks for nothing, except for the
			// scalar "" against a set scalar.
			switch want.(type) {
			case map[string]any, []any, nil:
				return have, nil
			}
		}
		return want, []string{path}
	}
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if have == nil {
			h, ok = map[string]any{}, true
		}
		if !ok {
			return runtime.DeepCopyJSONValue(w), []string{path}
		}
		return keepIfSame(have)(mergeMap(w, h, exact, path))
	case []any:
		h, ok := have.([]any)
		if have == nil {
			h, ok = []any{}, true
		}
		if !ok {
			return runtime.DeepCopyJSONValue(w), []string{path}
		}
		return keepIfSame(have)(mergeList(w, h, exact, path))
	default:
		if scalarEqual(want, have) {
			return have, nil
		}
		return want, []string{path}
	}
}

// keepIfSame returns the live value unchanged when nothing differs, so a
// match never adds empty maps or reorders anything.
func keepIfSame(have any) func(any, []string) (any, []string) {
	return func(merged any, diffs []string) (any, []string) {
		if len(diffs) == 0 {
			return have, nil
		}
		return merged, diffs
	}
}

func mergeMap(want, have map[string]any, exact bool, path string) (any, []string) {
	out := make(map[string]any, len(have))
	if !exact {
		for k, v := range have {
			out[k] = v
		}
	}
	var diffs []string
	for _, k := range sortedKeys(want) {
		m, d := value(want[k], have[k], exact, path+"."+k)
		if m != nil {
			out[k] = m
		} else {
			delete(out, k)
		}
		diffs = append(diffs, d...)
	}
	if exact {
		for _, k := range sortedKeys(have) {
			if _, named := want[k]; !named && !isEmpty(have[k]) {
				diffs = append(diffs, path+"."+k)
			}
		}
		if len(diffs) == 0 {
			return have, nil
		}
	}
	return out, diffs
}

// mergeList matches template items to live items (a maximum matching, so the
// order of either list never matters) and merges the rest.
func mergeList(want, have []any, exact bool, path string) (any, []string) {
	matches := func(w, h any) bool {
		_, d := value(w, h, exact, "")
		return len(d) == 0
	}
	pairOfHave := maximumMatching(want, have, matches)
	matched := make([]bool, len(want))
	for _, wi := range pairOfHave {
		if wi >= 0 {
			matched[wi] = true
		}
	}
	allMatched := true
	for _, ok := range matched {
		allMatched = allMatched && ok
	}
	if exact {
		if allMatched && len(want) == len(have) {
			return have, nil
		}
		return runtime.DeepCopyJSONValue(want), []string{path + listItemDiffs(want, have, matched, pairOfHave)}
	}
	if allMatched {
		return have, nil
	}
	out := make([]any, len(have))
	copy(out, have)
	used := make([]bool, len(have))
	for hi, wi := range pairOfHave {
		used[hi] = wi >= 0
	}
	var diffs []string
	for wi, w := range want {
		if matched[wi] {
			continue
		}
		if name, ok := itemName(w); ok {
			if hi := findByName(have, used, name); hi >= 0 {
				used[hi] = true
				m, d := value(w, have[hi], false, fmt.Sprintf("%s[name=%s]", path, name))
				out[hi] = m
				diffs = append(diffs, d...)
				continue
			}
			diffs = append(diffs, fmt.Sprintf("%s[name=%s]", path, name))
		} else {
			diffs = append(diffs, fmt.Sprintf("%s[%d]", path, wi))
		}
		out = append(out, runtime.DeepCopyJSONValue(w))
	}
	return out, diffs
}

// listItemDiffs names the unmatched items of an exact list comparison.
func listItemDiffs(want, have []any, matched []bool, pairOfHave []int) string {
	var parts []string
	for wi, ok := range matched {
		if !ok {
			if name, named := itemName(want[wi]); named {
				parts = append(parts, "name="+name)
			} else {
				parts = append(parts, fmt.Sprint(wi))
			}
		}
	}
	extra := 0
	for _, wi := range pairOfHave {
		if wi < 0 {
			extra++
		}
	}
	if extra > 0 {
		parts = append(parts, fmt.Sprintf("+%d extra", extra))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// maximumMatching pairs template items with live items they match, as many
// as possible (Kuhn's augmenting paths; lists are short). It returns, per
// live item, the index of its template item or -1.
func maximumMatching(want, have []any, matches func(w, h any) bool) []int {
	adj := make([][]int, len(want))
	for wi := range want {
		for hi := range have {
			if matches(want[wi], have[hi]) {
				adj[wi] = append(adj[wi], hi)
			}
		}
	}
	pair := make([]int, len(have))
	for i := range pair {
		pair[i] = -1
	}
	var try func(wi int, seen []bool) bool
	try = func(wi int, seen []bool) bool {
		for _, hi := range adj[wi] {
			if seen[hi] {
				continue
			}
			seen[hi] = true
			if pair[hi] < 0 || try(pair[hi], seen) {
				pair[hi] = wi
				return true
			}
		}
		return false
	}
	for wi := range want {
		try(wi, make([]bool, len(have)))
	}
	return pair
}

func itemName(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	name, ok := m["name"].(string)
	return name, ok && name != ""
}

func findByName(items []any, used []bool, name string) int {
	for i, it := range items {
		if n, ok := itemName(it); ok && n == name && !used[i] {
			return i
		}
	}
	return -1
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// normalizeSecret folds a Secret's stringData into data (base64), the form
// the apiserver stores and returns.
func normalizeSecret(obj map[string]any) map[string]any {
	if obj == nil || obj["kind"] != "Secret" {
		return obj
	}
	sd, ok := obj["stringData"].(map[string]any)
	if !ok {
		return obj
	}
	data, _ := obj["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		data[k] = base64.StdEncoding.EncodeToString([]byte(fmt.Sprint(v)))
	}
	obj["data"] = data
	delete(obj, "stringData")
	return obj
}
