package work

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
)

// FuzzValidate feeds arbitrary manifests (the bytes a ManifestWork carries) to
// the webhook's check. It never panics, and every problem names its manifest
// ("manifest N") or the work's manifests as a whole, so a person can find it.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"x"}}`))
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}` + "\x00" + `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"generateName":"x-"}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[1,2,3]`))
	f.Add([]byte(`{"metadata":"oops"}`))
	f.Add([]byte(`{"apiVersion":7,"kind":{},"metadata":{"name":["a"]}}`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		w := &workv1.ManifestWork{}
		for _, part := range bytes.Split(data, []byte{0}) {
			w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: part}})
		}
		for _, p := range Validate(w, 1024) {
			if !strings.Contains(p, "manifest") {
				t.Fatalf("problem %q does not say which manifest", p)
			}
		}
	})
}
