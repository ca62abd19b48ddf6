package compare

import (
	"encoding/json"
	"math"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

// scalarEqual compares two JSON scalars: numbers as numbers, and numbers or
// strings that are Kubernetes quantities as quantities.
func scalarEqual(a, b any) bool {
	if a == b {
		return true
	}
	af, aNum := number(a)
	bf, bNum := number(b)
	if aNum && bNum {
		return af == bf
	}
	as, aStr := a.(string)
	bs, bStr := b.(string)
	if !aStr && !bStr {
		return false
	}
	if aStr && bStr && as == bs {
		return true
	}
	// Two plain numeric strings ("1.0", "1") stay strings: versions and tags
	// look like that. A unit suffix or a JSON number makes it a quantity.
	if aStr && bStr && !hasSuffix(as) && !hasSuffix(bs) {
		return false
	}
	aq, ok := quantity(a)
	if !ok {
		return false
	}
	bq, ok := quantity(b)
	if !ok {
		return false
	}
	return aq.Cmp(bq) == 0
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float32:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func quantity(v any) (resource.Quantity, bool) {
	switch t := v.(type) {
	case string:
		q, err := resource.ParseQuantity(t)
		return q, err == nil
	default:
		f, ok := number(v)
		if !ok || math.IsInf(f, 0) || math.IsNaN(f) {
			return resource.Quantity{}, false
		}
		q, err := resource.ParseQuantity(strconv.FormatFloat(f, 'f', -1, 64))
		return q, err == nil
	}
}

// hasSuffix reports whether s ends like a quantity with a unit (Mi, G, m, k...).
func hasSuffix(s string) bool {
	if s == "" {
		return false
	}
	c := s[len(s)-1]
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
