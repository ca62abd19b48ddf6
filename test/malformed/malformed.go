// Package malformed makes malformed objects from good ones, for feeding a real
// apiserver many bad inputs at once (test/e2e/badinput's TestMalformed).
//
// A Case is one good object with one mutation at one path of its spec: a value
// of the wrong type, out of range, too long, an unknown enum value, a null, a
// deep nesting, an unknown field. Generation is pure and seeded: the same seed
// and bases give the same cases, so a failure repeats.
package malformed

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Case is one malformed object and how it was made.
type Case struct {
	// Object is the malformed object (a deep copy of its base, renamed).
	Object *unstructured.Unstructured
	// Base names the good object it was made from (kind/name).
	Base string
	// Path is the mutated field, e.g. spec.predicates[0].requiredClusterSelector.
	Path string
	// Field is the last key of Path that is not an index: the name a refusal
	// should mention.
	Field string
	// Parent is the key before Field ("" at the top of spec).
	Parent string
	// Mutation says what was done, e.g. "int 2147483648".
	Mutation string
}

func (c Case) String() string {
	return fmt.Sprintf("%s %s: %s %s", c.Object.GetKind(), c.Object.GetName(), c.Path, c.Mutation)
}

// mutation replaces a value; ok is false when it does not apply to old.
type mutation struct {
	name  string
	apply func(old any) (repl any, ok bool)
}

// always makes a mutation that applies to any value.
func always(name string, v func() any) mutation {
	return mutation{name, func(any) (any, bool) { return v(), true }}
}

// mutations is the palette. Values that keep the type are chosen to be out of
// range or to be names no schema knows.
var mutations = []mutation{
	always("string 'not-a-number'", func() any { return "not-a-number" }),
	always("int 2147483648", func() any { return int64(2147483648) }),
	always("int -1", func() any { return int64(-1) }),
	always("float 1.5", func() any { return 1.5 }),
	always("bool true", func() any { return true }),
	always("list [x]", func() any { return []any{"x"} }),
	always("map {x: y}", func() any { return map[string]any{"x": "y"} }),
	always("null", func() any { return nil }),
	always("string of 100,000", func() any { return strings.Repeat("x", 100000) }),
	always("string 'Bogus'", func() any { return "Bogus" }),
	always("empty string", func() any { return "" }),
	always("string with control characters", func() any { return "a\x00b\x1b[31mc\u202e" }),
	always("nesting 40 deep", func() any {
		var v any = "leaf"
		for i := 0; i < 40; i++ {
			v = map[string]any{"n": v}
		}
		return v
	}),
	always("list of 2,000", func() any {
		l := make([]any, 2000)
		for i := range l {
			l[i] = "x" + strconv.Itoa(i)
		}
		return l
	}),
	{"unknown field beside", func(old any) (any, bool) {
		m, ok := old.(map[string]any)
		if !ok {
			return nil, false
		}
		m = maps.Clone(m)
		m["flotillaUnknownField"] = "x"
		return m, true
	}},
	{"empty map", func(old any) (any, bool) {
		if _, ok := old.(map[string]any); !ok {
			return nil, false
		}
		return map[string]any{}, true
	}},
	{"empty list", func(old any) (any, bool) {
		if _, ok := old.([]any); !ok {
			return nil, false
		}
		return []any{}, true
	}},
	{"list item duplicated", func(old any) (any, bool) {
		l, ok := old.([]any)
		if !ok || len(l) == 0 {
			return nil, false
		}
		return append(append([]any{}, l...), l[0]), true
	}},
	{"number negated", func(old any) (any, bool) {
		switch n := old.(type) {
		case int64:
			return -n - 1, true
		case float64:
			return -n - 1, true
		}
		return nil, false
	}},
	{"string lengthened to 300", func(old any) (any, bool) {
		s, ok := old.(string)
		if !ok {
			return nil, false
		}
		return s + strings.Repeat("z", 300), true
	}},
	{"string upper-cased with spaces", func(old any) (any, bool) {
		s, ok := old.(string)
		if !ok || s == "" {
			return nil, false
		}
		return strings.ToUpper(s) + " X", true
	}},
}

// step is one segment of a path: a map key or a list index.
type step struct {
	key   string
	index int // -1 for a key
}

// Paths lists every mutable path under spec (or any other top-level field
// but apiVersion, kind, metadata and status) and metadata.labels and
// annotations, containers and leaves, in a stable order.
func Paths(obj map[string]any) [][]step {
	var out [][]step
	var walk func(v any, at []step)
	walk = func(v any, at []step) {
		if len(at) > 1 || (len(at) == 1 && at[0].key != "metadata") {
			out = append(out, append([]step(nil), at...))
		}
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(v[k], append(at, step{key: k, index: -1}))
			}
		case []any:
			for i, x := range v {
				walk(x, append(at, step{index: i}))
			}
		}
	}
	top := make([]string, 0, len(obj))
	for k := range obj {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
		default:
			top = append(top, k)
		}
	}
	sort.Strings(top)
	for _, k := range top { // spec, and the top-level fields of kinds without one (PlacementBinding)
		walk(obj[k], []step{{key: k, index: -1}})
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		for _, k := range []string{"labels", "annotations"} {
			if v, ok := md[k]; ok {
				walk(v, []step{{key: "metadata", index: -1}, {key: k, index: -1}})
			}
		}
	}
	return out
}

// String renders a path as the apiserver does: spec.a[0].b.
func String(p []step) string {
	var b strings.Builder
	for i, s := range p {
		if s.index >= 0 {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}

// names returns the last key of p that is not an index, and the key before it.
func names(p []step) (field, parent string) {
	var keys []string
	for _, s := range p {
		if s.index < 0 {
			keys = append(keys, s.key)
		}
	}
	field = keys[len(keys)-1]
	if len(keys) > 1 {
		parent = keys[len(keys)-2]
	}
	return field, parent
}

// set replaces the value at p in obj.
func set(obj map[string]any, p []step, v any) {
	var cur any = obj
	for i, s := range p {
		last := i == len(p)-1
		if s.index >= 0 {
			l := cur.([]any)
			if last {
				l[s.index] = v
				return
			}
			cur = l[s.index]
			continue
		}
		m := cur.(map[string]any)
		if last {
			m[s.key] = v
			return
		}
		cur = m[s.key]
	}
}

// get reads the value at p in obj.
func get(obj map[string]any, p []step) any {
	var cur any = obj
	for _, s := range p {
		if s.index >= 0 {
			cur = cur.([]any)[s.index]
		} else {
			cur = cur.(map[string]any)[s.key]
		}
	}
	return cur
}

// Generate makes n cases from bases, spread evenly over them, each named
// <prefix><i>. Bases must have a spec; bases with nothing to mutate are
// refused.
func Generate(seed uint64, bases []*unstructured.Unstructured, n int, prefix string) ([]Case, error) {
	if len(bases) == 0 {
		return nil, fmt.Errorf("no base objects")
	}
	paths := make([][][]step, len(bases))
	for i, b := range bases {
		paths[i] = Paths(b.Object)
		if len(paths[i]) == 0 {
			return nil, fmt.Errorf("base %s/%s has nothing to mutate", b.GetKind(), b.GetName())
		}
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]Case, 0, n)
	for i := 0; i < n; i++ {
		bi := i % len(bases)
		base := bases[bi]
		obj := base.DeepCopy()
		p := paths[bi][rng.IntN(len(paths[bi]))]
		old := get(obj.Object, p)
		var m mutation
		var repl any
		for {
			m = mutations[rng.IntN(len(mutations))]
			if v, ok := m.apply(old); ok && !reflect.DeepEqual(v, old) {
				repl = v
				break
			}
		}
		set(obj.Object, p, repl)
		obj.SetName(fmt.Sprintf("%s%d", prefix, i))
		field, parent := names(p)
		out = append(out, Case{Object: obj, Base: base.GetKind() + "/" + base.GetName(), Path: String(p),
			Field: field, Parent: parent, Mutation: m.name})
	}
	return out, nil
}

// Names tells whether a refusal's message names the mutated field: its path,
// its key, or the key of its parent (spec and metadata alone name nothing
// unless the mutated field is itself a spec or a metadata).
func (c Case) Names(msg string) bool {
	if strings.Contains(msg, c.Path) {
		return true
	}
	if c.Field == "spec" || c.Field == "metadata" { // a generic key names the field with what follows it
		return strings.Contains(msg, c.Field+".") || strings.Contains(msg, c.Field+":")
	}
	for _, s := range []string{c.Field, c.Parent} {
		if s != "" && s != "spec" && s != "metadata" && strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
