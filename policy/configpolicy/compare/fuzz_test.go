package compare

import (
	"encoding/json"
	"testing"
)

// FuzzObject compares arbitrary templates with arbitrary live objects (both
// from JSON, as a policy author and a cluster provide them). It never panics,
// never changes its inputs, and enforcing converges: the merged object (what
// enforce would write) holds the template, so a second pass finds nothing to
// change, unless the only differences are under status, which enforce never
// writes.
func FuzzObject(f *testing.F) {
	f.Add(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"1"}},"data":{"k":"v"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"w","o":"p"}}`, false)
	f.Add(`{"spec":{"containers":[{"name":"web","image":"nginx:1"}]}}`,
		`{"spec":{"containers":[{"name":"side","image":"x"},{"name":"web","image":"nginx:0","ports":[{"containerPort":80}]}]}}`, false)
	f.Add(`{"spec":{"containers":[{"name":"web","image":"nginx:1"}]}}`, `{"spec":{"containers":"oops"}}`, true)
	f.Add(`{"spec":{"replicas":3,"list":[1,2,3]}}`, `{"spec":{"replicas":"3","list":[3,2,1]}}`, true)
	f.Add(`{"kind":"Secret","stringData":{"a":"b"}}`, `{"kind":"Secret","data":{"a":"Yg=="}}`, false)
	f.Add(`{"status":{"phase":"Running"}}`, `{"status":{"phase":"Pending"}}`, false)
	f.Add(`{"a":null,"b":{}}`, `{"a":{"c":1},"b":null}`, true)
	f.Fuzz(func(t *testing.T, template, live string, exact bool) {
		var tm, lv map[string]any
		if json.Unmarshal([]byte(template), &tm) != nil || json.Unmarshal([]byte(live), &lv) != nil || tm == nil || lv == nil {
			return
		}
		// The engine compares a template only with live objects of its kind.
		if k, ok := tm["kind"]; ok {
			lv["kind"] = k
		} else {
			delete(lv, "kind")
		}
		before, _ := json.Marshal([]any{tm, lv})
		opts := Options{}
		if exact {
			opts.Mode = MustOnlyHave
		}
		r := Object(tm, lv, opts)
		after, _ := json.Marshal([]any{tm, lv})
		if string(before) != string(after) {
			t.Fatal("Object changed its inputs")
		}
		if r.Match != (len(r.Mismatches) == 0) {
			t.Fatalf("Match=%v with mismatches %v", r.Match, r.Mismatches)
		}
		if r.Match || r.StatusOnly || r.Merged == nil {
			return
		}
		if _, ok := tm["status"]; ok {
			return // enforce leaves status alone
		}
		again := Object(tm, r.Merged, opts)
		if !again.Match {
			t.Fatalf("enforcing does not converge: after merging, still %v\ntemplate %s\nlive %s\nmerged %v", again.Mismatches, template, live, r.Merged)
		}
	})
}
