package work

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
)

func mw(manifests ...string) *workv1.ManifestWork {
	w := &workv1.ManifestWork{}
	for _, m := range manifests {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(m)}})
	}
	return w
}

const (
	cmA  = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"}}`
	cmB  = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"ns"}}`
	nsNs = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns"}}`
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name  string
		work  *workv1.ManifestWork
		limit int
		want  []string // substrings, one per problem
	}{
		{"valid", mw(nsNs, cmA, cmB), 0, nil},
		{"no manifests", mw(), 0, []string{"spec.workload.manifests is empty"}},
		{"empty manifest", mw(cmA, `{}`), 0, []string{"manifest 1 is empty"}},
		{"null manifest", mw(`null`), 0, []string{"manifest 0 is empty"}},
		{"not an object", mw(`[1,2]`), 0, []string{"manifest 0 is not a JSON object"}},
		{"missing apiVersion", mw(`{"kind":"ConfigMap","metadata":{"name":"a"}}`), 0, []string{"manifest 0 (ConfigMap) has no apiVersion"}},
		{"missing kind", mw(`{"apiVersion":"v1","metadata":{"name":"a"}}`), 0, []string{"manifest 0 has no kind"}},
		{"missing name", mw(nsNs, `{"apiVersion":"v1","kind":"Secret","metadata":{"namespace":"ns"}}`), 0,
			[]string{"manifest 1 (Secret) has no metadata.name"}},
		{"missing everything", mw(`{"data":{}}`), 0, []string{"manifest 0 has no apiVersion, kind, metadata.name"}},
		{"generateName", mw(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"x-","namespace":"ns"}}`), 0,
			[]string{"manifest 0 (ConfigMap) has no metadata.name", `manifest 0 (ConfigMap) uses metadata.generateName "x-"`}},
		{"duplicate", mw(cmA, cmB, cmA), 0, []string{"manifest 2 (ConfigMap ns/a) duplicates manifest 0"}},
		{"same name other namespace is fine", mw(cmA, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"other"}}`), 0, nil},
		{"same name other kind is fine", mw(cmA, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a","namespace":"ns"}}`), 0, nil},
		{"too large", mw(cmA, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"x":"`+strings.Repeat("x", 600)+`"}}`), 500,
			[]string{"more than the limit of 500 bytes; the largest is manifest 1 (ConfigMap"}},
		{"default limit is 500 KiB", mw(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"x":"` + strings.Repeat("x", 500*1024) + `"}}`), 0,
			[]string{"more than the limit of 512000 bytes"}},
		{"several problems all reported", mw(`{}`, cmA, cmA), 0, []string{"manifest 0 is empty", "manifest 2 (ConfigMap ns/a) duplicates manifest 1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Validate(tc.work, tc.limit)
			assert.Len(t, got, len(tc.want), "%q", got)
			for i := range tc.want {
				if i < len(got) {
					assert.Contains(t, got[i], tc.want[i])
				}
			}
		})
	}
}
