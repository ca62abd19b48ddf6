package distribute

import (
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RFC 6901 forbids an index with a leading zero ("01"); the library takes
// it, applyPatch refuses it.
func TestJSONPatchLeadingZeroIndex(t *testing.T) {
	ops, err := decodePatch([]jsonPatchInput{{Op: "replace", Path: "/spec/list/01", Value: []byte("1")}}, &Cluster{})
	require.NoError(t, err)
	obj, err := decodeObject([]byte(`{"spec":{"list":[1,2]}}`))
	require.NoError(t, err)
	_, err = applyPatch(obj, ops)
	assert.ErrorContains(t, err, `"01" is not an array index`)
}

// TestJSONPatchAgreesWithEvanphx applies each patch with applyPatch and with
// github.com/evanphx/json-patch (default options: no missing paths created or
// tolerated) and wants the same document, or both to fail.
func TestJSONPatchAgreesWithEvanphx(t *testing.T) {
	const doc = `{"metadata":{"name":"web","labels":{"a/b":"1","c~d":"2"}},"spec":{"replicas":3,"big":9007199254740993,
"list":[1,2,3],"nested":{"x":[{"k":"v"}]},"empty":{}}}`
	tests := []struct{ name, patch, errPart string }{
		{"add a key", `[{"op":"add","path":"/spec/new","value":{"a":[1,"two"]}}]`, ""},
		{"add replaces a key", `[{"op":"add","path":"/spec/replicas","value":5}]`, ""},
		{"add into an array", `[{"op":"add","path":"/spec/list/1","value":9}]`, ""},
		{"append with -", `[{"op":"add","path":"/spec/list/-","value":9}]`, ""},
		{"append at the length", `[{"op":"add","path":"/spec/list/3","value":9}]`, ""},
		{"add past the length", `[{"op":"add","path":"/spec/list/5","value":9}]`, "out of range"},
		{"add under a missing parent", `[{"op":"add","path":"/spec/missing/x","value":1}]`, "/spec/missing does not exist"},
		{"escaped tokens", `[{"op":"replace","path":"/metadata/labels/a~1b","value":"x"},{"op":"remove","path":"/metadata/labels/c~0d"}]`, ""},
		{"remove a key", `[{"op":"remove","path":"/spec/replicas"}]`, ""},
		{"remove from an array", `[{"op":"remove","path":"/spec/list/0"}]`, ""},
		{"remove a missing key", `[{"op":"remove","path":"/spec/nope"}]`, "/spec/nope does not exist"},
		{"remove -", `[{"op":"remove","path":"/spec/list/-"}]`, "not an array index"},
		{"replace a missing key", `[{"op":"replace","path":"/spec/nope","value":1}]`, "does not exist"},
		{"replace in an array", `[{"op":"replace","path":"/spec/nested/x/0/k","value":"w"}]`, ""},
		{"move", `[{"op":"move","from":"/spec/list","path":"/spec/empty/moved"}]`, ""},
		{"move into its child", `[{"op":"move","from":"/spec","path":"/spec/child"}]`, "own child"},
		{"copy", `[{"op":"copy","from":"/spec/nested","path":"/spec/copied"}]`, ""},
		{"copy then change the copy only", `[{"op":"copy","from":"/spec/nested","path":"/spec/copied"},{"op":"replace","path":"/spec/copied/x/0/k","value":"changed"}]`, ""},
		{"test passes, numbers by value", `[{"op":"test","path":"/spec/replicas","value":3},{"op":"add","path":"/spec/ok","value":true}]`, ""},
		{"test fails", `[{"op":"test","path":"/spec/replicas","value":4}]`, "differs"},
		{"test an object", `[{"op":"test","path":"/spec/nested","value":{"x":[{"k":"v"}]}}]`, ""},
		{"a path through a string", `[{"op":"add","path":"/metadata/name/x","value":1}]`, "not an object or array"},
		{"big integers survive", `[{"op":"add","path":"/spec/more","value":9007199254740995}]`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, libErr := func() ([]byte, error) {
				p, err := jsonpatch.DecodePatch([]byte(tc.patch))
				if err != nil {
					return nil, err
				}
				return p.Apply([]byte(doc))
			}()
			var in []jsonPatchInput
			var raw []struct {
				Op, Path, From string
				Value          json.RawMessage
			}
			require.NoError(t, json.Unmarshal([]byte(tc.patch), &raw))
			for _, r := range raw {
				pi := jsonPatchInput{Op: r.Op, Path: r.Path, From: r.From}
				if r.Value != nil {
					pi.Value = r.Value
				}
				in = append(in, pi)
			}
			ops, err := decodePatch(in, &Cluster{})
			require.NoError(t, err)
			obj, err := decodeObject([]byte(doc))
			require.NoError(t, err)
			got, err := applyPatch(obj, ops)
			if tc.errPart != "" {
				assert.ErrorContains(t, err, tc.errPart)
				assert.Error(t, libErr, "the library refuses it too")
				return
			}
			require.NoError(t, err)
			require.NoError(t, libErr)
			gotRaw, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, string(want), string(gotRaw))
			if tc.name == "big integers survive" {
				assert.Contains(t, string(gotRaw), "9007199254740993")
				assert.Contains(t, string(gotRaw), "9007199254740995")
			}
		})
	}
}

// TestJSONPatchCopyBomb: 64 copies of an object into itself would double it
// 64 times; the patch stops once it adds more than maxPatchGrowth bytes.
func TestJSONPatchCopyBomb(t *testing.T) {
	var in []jsonPatchInput
	for i := 0; i < 64; i++ {
		in = append(in, jsonPatchInput{Op: "copy", From: "/data", Path: "/data/k" + string(rune('a'+i%26)) + string(rune('a'+i/26))})
	}
	ops, err := decodePatch(in, &Cluster{})
	require.NoError(t, err)
	obj, err := decodeObject([]byte(`{"data":{"x":"0123456789012345678901234567890123456789"}}`))
	require.NoError(t, err)
	_, err = applyPatch(obj, ops)
	assert.ErrorContains(t, err, "the patches would add more than 524288 bytes to this cluster's manifests")

	// A few copies of a small object are fine.
	obj, err = decodeObject([]byte(`{"data":{"x":"0123456789"}}`))
	require.NoError(t, err)
	_, err = applyPatch(obj, ops[:8])
	assert.NoError(t, err)
}

func TestJSONSize(t *testing.T) {
	for _, raw := range []string{`{"a":[1,"two",{"b":null}],"c":true}`, `"x"`, `[]`, `{"k":{"l":{"m":"nnnnnnnnnn"}}}`} {
		v, err := decodeValue([]byte(raw))
		require.NoError(t, err)
		assert.GreaterOrEqual(t, jsonSize(v, 1<<20), len(raw), raw)
	}
}
