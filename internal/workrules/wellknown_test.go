package workrules

import (
	"reflect"
	"testing"

	workv1 "open-cluster-management.io/api/work/v1"
)

func TestWellKnownFor(t *testing.T) {
	for _, tc := range []struct {
		groupKind string
		want      []string
	}{
		{"Job.batch", []string{workv1.ManifestComplete, workv1.ManifestDegraded}},
		{"Pod", []string{workv1.ManifestComplete}},
		{"Deployment.apps", []string{workv1.ManifestDegraded, workv1.ManifestProgressing}},
		{"ConfigMap", nil},
	} {
		if got := WellKnownFor(tc.groupKind); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("WellKnownFor(%q) = %v, want %v", tc.groupKind, got, tc.want)
		}
		for _, c := range tc.want {
			r, ok := WellKnown(tc.groupKind, c)
			if !ok || r.Type != workv1.CelConditionExpressionsType || r.Condition != c || len(r.CelExpressions) == 0 {
				t.Errorf("WellKnown(%q, %q) = %+v, %v", tc.groupKind, c, r, ok)
			}
		}
	}
	if _, ok := WellKnown("Pod", workv1.ManifestDegraded); ok {
		t.Error("WellKnown(Pod, Degraded) found a rule; there is none")
	}
}
