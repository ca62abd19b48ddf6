package apply

import (
	"encoding/base64"
	"reflect"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Covers reports whether the live object carries everything the desired
// manifest says: every field of desired (outside metadata and status) is present
// in live with an equal value, and desired's labels and annotations are set on
// live. Fields others add (defaults, extra keys, extra labels) are not looked
// at. Lists compare item by item and must have the same length; quantities
// compare by value ("1000m" equals "1"); a Secret's stringData compares against
// the live data.
//
// Covers is the drift check of ServerSideApply, where other field managers may
// own fields of their own, and the fallback of Update when the apiserver
// refuses to say what an update would produce. It is not enough on its own for
// Update: see Drifted.
func Covers(desired, live *unstructured.Unstructured) bool {
	d := normalise(desired.Object)
	for k, v := range d {
		switch k {
		case "metadata", "status":
			continue
		case "apiVersion", "kind":
			continue
		}
		if !subset(v, live.Object[k]) {
			return false
		}
	}
	if !subset(toInterfaceMap(desired.GetLabels()), toInterfaceMap(live.GetLabels())) {
		return false
	}
	return subset(toInterfaceMap(desired.GetAnnotations()), toInterfaceMap(live.GetAnnotations()))
}

func toInterfaceMap(m map[string]string) map[string]interface{} {
	out := make(map[string]interface{}, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// normalise rewrites a Secret's stringData into base64 data, as the apiserver does.
func normalise(obj map[string]interface{}) map[string]interface{} {
	kind, _ := obj["kind"].(string)
	sd, ok := obj["stringData"].(map[string]interface{})
	if kind != "Secret" || !ok {
		return obj
	}
	out := make(map[string]interface{}, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	data := map[string]interface{}{}
	if d, ok := obj["data"].(map[string]interface{}); ok {
		for k, v := range d {
			data[k] = v
		}
	}
	for k, v := range sd {
		if s, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
	delete(out, "stringData")
	out["data"] = data
	return out
}

func subset(desired, live interface{}) bool {
	if desired == nil {
		return true // the apiserver drops nulls
	}
	switch d := desired.(type) {
	case map[string]interface{}:
		l, ok := live.(map[string]interface{})
		if !ok {
			return len(d) == 0 && live == nil
		}
		for k, dv := range d {
			lv, present := l[k]
			if !present {
				if dv == nil || isEmpty(dv) {
					continue
				}
				return false
			}
			if !subset(dv, lv) {
				return false
			}
		}
		return true
	case []interface{}:
		l, ok := live.([]interface{})
		if !ok {
			return len(d) == 0 && live == nil
		}
		if len(d) != len(l) {
			return false
		}
		for i := range d {
			if !subset(d[i], l[i]) {
				return false
			}
		}
		return true
	case string:
		ls, ok := live.(string)
		if !ok {
			return numberEqualsString(live, d)
		}
		if d == ls {
			return true
		}
		return quantityEqual(d, ls)
	case int64, int, int32, float64, float32:
		if s, ok := live.(string); ok {
			return numberEqualsString(d, s)
		}
		df, ok1 := toFloat(d)
		lf, ok2 := toFloat(live)
		return ok1 && ok2 && df == lf
	default:
		return reflect.DeepEqual(desired, live)
	}
}

func isEmpty(v interface{}) bool {
	switch t := v.(type) {
	case map[string]interface{}:
		return len(t) == 0
	case []interface{}:
		return len(t) == 0
	}
	return false
}

func toFloat(v interface{}) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}

// numberEqualsString covers quantities written as numbers on one side
// (cpu: 1) and normalised to strings on the other (cpu: "1").
func numberEqualsString(n interface{}, s string) bool {
	f, ok := toFloat(n)
	if !ok {
		return false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return false
	}
	return q.AsApproximateFloat64() == f
}

func quantityEqual(a, b string) bool {
	qa, err := resource.ParseQuantity(a)
	if err != nil {
		return false
	}
	qb, err := resource.ParseQuantity(b)
	if err != nil {
		return false
	}
	return qa.Cmp(qb) == 0
}
