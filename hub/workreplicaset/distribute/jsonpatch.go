package distribute

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// An RFC 6902 patch applied to a decoded manifest in place. Rendering 1,000
// clusters applies patches thousands of times: github.com/evanphx/json-patch
// works on bytes, and the encode/decode round trip each time was most of the
// render's cost (docs/benchmarks.md). TestJSONPatchAgreesWithEvanphx checks
// this against that library case by case.

// patchOp is one decoded operation: path and from split into tokens, value
// decoded (numbers as json.Number).
type patchOp struct {
	op, path, from string
	pathTokens     []string
	fromTokens     []string
	value          any
}

// decodePatch checks and decodes the operations; values are expanded for c
// (nil: only their templates' syntax is checked).
func decodePatch(ops []jsonPatchInput, c *Cluster) ([]patchOp, error) {
	out := make([]patchOp, 0, len(ops))
	for i, o := range ops {
		p := patchOp{op: o.Op, path: o.Path, from: o.From}
		var err error
		if p.pathTokens, err = pointer(o.Path); err != nil {
			return nil, fmt.Errorf("[%d] path: %w", i, err)
		}
		switch o.Op {
		case "add", "replace", "test":
			if o.Value == nil {
				return nil, fmt.Errorf("[%d] %s %s: needs a value", i, o.Op, o.Path)
			}
			v, err := decodeValue(o.Value)
			if err != nil {
				return nil, fmt.Errorf("[%d] %s %s: value: %w", i, o.Op, o.Path, err)
			}
			if p.value, err = expandValue(v, c); err != nil {
				return nil, fmt.Errorf("[%d] %s %s: %w", i, o.Op, o.Path, err)
			}
		case "move", "copy":
			if o.From == "" {
				return nil, fmt.Errorf("[%d] %s %s: needs from", i, o.Op, o.Path)
			}
			if p.fromTokens, err = pointer(o.From); err != nil {
				return nil, fmt.Errorf("[%d] from: %w", i, err)
			}
		case "remove":
		default:
			return nil, fmt.Errorf("[%d]: unknown op %q (want add, remove, replace, move, copy or test)", i, o.Op)
		}
		out = append(out, p)
	}
	return out, nil
}

// jsonPatchInput is one operation as the API holds it.
type jsonPatchInput struct {
	Op, Path, From string
	Value          []byte
}

func decodeValue(raw []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// pointer splits an RFC 6901 JSON pointer into its unescaped tokens.
func pointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if err := checkPointer(p); err != nil {
		return nil, err
	}
	parts := strings.Split(p[1:], "/")
	for i, t := range parts {
		if strings.Contains(t, "~") {
			parts[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
		}
	}
	return parts, nil
}

// applyPatch applies ops to doc in order and returns the document (a
// replaced root is a new one). doc is changed in place.
func applyPatch(doc any, ops []patchOp) (any, error) {
	budget := maxPatchGrowth
	return applyPatchWithin(doc, ops, &budget)
}

// applyPatchWithin is applyPatch taking what it adds from *budget (bytes
// left for one cluster's render; see maxPatchGrowth).
func applyPatchWithin(doc any, ops []patchOp, budget *int) (any, error) {
	grow := func(v any) error {
		if *budget -= jsonSize(v, *budget+1); *budget < 0 {
			return fmt.Errorf("the patches would add more than %d bytes to this cluster's manifests", maxPatchGrowth)
		}
		return nil
	}
	for _, o := range ops {
		var err error
		switch o.op {
		case "add":
			if err = grow(o.value); err == nil {
				doc, err = add(doc, o.pathTokens, runtime.DeepCopyJSONValue(o.value))
			}
		case "remove":
			doc, _, err = remove(doc, o.pathTokens)
		case "replace":
			if _, err = get(doc, o.pathTokens); err == nil {
				err = grow(o.value)
			}
			if err == nil {
				doc, _, err = remove(doc, o.pathTokens)
				if err == nil {
					doc, err = add(doc, o.pathTokens, runtime.DeepCopyJSONValue(o.value))
				}
			}
		case "move":
			if isPrefix(o.fromTokens, o.pathTokens) && len(o.fromTokens) < len(o.pathTokens) {
				err = fmt.Errorf("cannot move into its own child")
				break
			}
			var v any
			if doc, v, err = remove(doc, o.fromTokens); err == nil {
				doc, err = add(doc, o.pathTokens, v)
			}
		case "copy":
			var v any
			if v, err = get(doc, o.fromTokens); err == nil {
				if err = grow(v); err == nil {
					doc, err = add(doc, o.pathTokens, runtime.DeepCopyJSONValue(v))
				}
			}
		case "test":
			var v any
			if v, err = get(doc, o.pathTokens); err == nil && !jsonEqual(v, o.value) {
				err = fmt.Errorf("the value differs")
			}
		}
		if err != nil {
			where := o.path
			if o.from != "" {
				where = o.from + " -> " + o.path
			}
			return nil, fmt.Errorf("%s %s: %w", o.op, where, err)
		}
	}
	return doc, nil
}

// maxPatchGrowth bounds what the JSON patches may add to one cluster's
// manifests (values added, replaced or copied, as encoded JSON): a copy of an
// object into itself doubles it, and 64 such operations once grew a manifest
// past any memory the hub has. OCM refuses a work whose manifests pass 500
// KiB anyway.
const maxPatchGrowth = 512 << 10

// jsonSize is about the length of v encoded as JSON, counted no further than
// limit (the result is then above it).
func jsonSize(v any, limit int) int {
	n := 0
	var walk func(v any)
	walk = func(v any) {
		if n > limit {
			return
		}
		switch t := v.(type) {
		case map[string]any:
			n += 2
			for k, x := range t {
				n += len(k) + 4
				walk(x)
				if n > limit {
					return
				}
			}
		case []any:
			n += 2
			for _, x := range t {
				n++
				walk(x)
				if n > limit {
					return
				}
			}
		case string:
			n += len(t) + 2
		case json.Number:
			n += len(t)
		default:
			n += 5
		}
	}
	walk(v)
	return n
}

func isPrefix(a, b []string) bool {
	if len(a) > len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// get is the value at tokens.
func get(doc any, tokens []string) (any, error) {
	cur := doc
	for i, t := range tokens {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[t]
			if !ok {
				return nil, fmt.Errorf("%s does not exist", join(tokens[:i+1]))
			}
			cur = v
		case []any:
			n, err := index(t, len(c), false)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", join(tokens[:i+1]), err)
			}
			cur = c[n]
		default:
			return nil, fmt.Errorf("%s does not exist (%s is not an object or array)", join(tokens[:i+1]), join(tokens[:i]))
		}
	}
	return cur, nil
}

// add puts v at tokens: the parent must exist; in an array, the index may be
// the length or "-" (append), and the items from it shift right.
func add(doc any, tokens []string, v any) (any, error) {
	if len(tokens) == 0 {
		return v, nil
	}
	parentTokens, last := tokens[:len(tokens)-1], tokens[len(tokens)-1]
	parent, err := get(doc, parentTokens)
	if err != nil {
		return nil, err
	}
	switch p := parent.(type) {
	case map[string]any:
		p[last] = v
	case []any:
		n, err := index(last, len(p), true)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", join(tokens), err)
		}
		p = append(p, nil)
		copy(p[n+1:], p[n:])
		p[n] = v
		return set(doc, parentTokens, p)
	default:
		return nil, fmt.Errorf("%s is not an object or array", join(parentTokens))
	}
	return doc, nil
}

// remove takes the value at tokens out and returns it.
func remove(doc any, tokens []string) (any, any, error) {
	if len(tokens) == 0 {
		return nil, nil, fmt.Errorf("cannot remove the whole manifest")
	}
	parentTokens, last := tokens[:len(tokens)-1], tokens[len(tokens)-1]
	parent, err := get(doc, parentTokens)
	if err != nil {
		return nil, nil, err
	}
	switch p := parent.(type) {
	case map[string]any:
		v, ok := p[last]
		if !ok {
			return nil, nil, fmt.Errorf("%s does not exist", join(tokens))
		}
		delete(p, last)
		return doc, v, nil
	case []any:
		n, err := index(last, len(p), false)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", join(tokens), err)
		}
		v := p[n]
		p = append(p[:n:n], p[n+1:]...)
		doc, err = set(doc, parentTokens, p)
		return doc, v, err
	default:
		return nil, nil, fmt.Errorf("%s is not an object or array", join(parentTokens))
	}
}

// set replaces the value at tokens (which exists) with v: how a grown or
// shrunk array is put back into its parent.
func set(doc any, tokens []string, v any) (any, error) {
	if len(tokens) == 0 {
		return v, nil
	}
	parent, err := get(doc, tokens[:len(tokens)-1])
	if err != nil {
		return nil, err
	}
	last := tokens[len(tokens)-1]
	switch p := parent.(type) {
	case map[string]any:
		p[last] = v
	case []any:
		n, err := index(last, len(p), false)
		if err != nil {
			return nil, err
		}
		p[n] = v
	}
	return doc, nil
}

// index reads an array index token: digits without a leading zero, below
// length (or equal to it, or "-", where an add may append).
func index(t string, length int, forAdd bool) (int, error) {
	if forAdd && t == "-" {
		return length, nil
	}
	if t == "" || (len(t) > 1 && t[0] == '0') || strings.TrimLeft(t, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not an array index", t)
	}
	n, err := strconv.Atoi(t)
	if err != nil || n > length || (!forAdd && n == length) {
		return 0, fmt.Errorf("index %s is out of range (length %d)", t, length)
	}
	return n, nil
}

func join(tokens []string) string {
	if len(tokens) == 0 {
		return "the manifest"
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// jsonEqual compares two decoded JSON values; numbers compare by value.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number, float64, int64, int:
		fa, oka := number(a)
		fb, okb := number(b)
		return oka && okb && fa.Cmp(fb) == 0
	default:
		return a == b
	}
}

func number(v any) (*big.Float, bool) {
	switch n := v.(type) {
	case json.Number:
		f, ok := new(big.Float).SetString(string(n))
		return f, ok
	case float64:
		return big.NewFloat(n), true
	case int64:
		return new(big.Float).SetInt64(n), true
	case int:
		return new(big.Float).SetInt64(int64(n)), true
	}
	return nil, false
}
