package placementread

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"flotilla.dev/flotilla/internal/placementread/placementtest"
	"flotilla.dev/flotilla/internal/scheme"
)

const ns = "default"

func testPlacement(selected int32, scheduled bool) *clusterv1beta1.Placement {
	return placementtest.Placement(ns, selected, scheduled)
}

func testDecision(name, ownerUID string, clusters ...string) *clusterv1beta1.PlacementDecision {
	return placementtest.Decision(ns, name, ownerUID, clusters...)
}

// TestCheck was hub/workreplicaset's TestCheckDecisions.
func TestCheck(t *testing.T) {
	disabled := testPlacement(0, false)
	disabled.Annotations = map[string]string{clusterv1beta1.PlacementDisableAnnotation: "true"}
	stale := testPlacement(2, true)
	stale.Generation = 2
	tests := []struct {
		name      string
		p         *clusterv1beta1.Placement
		decisions []*clusterv1beta1.PlacementDecision
		want      Readiness
		own       int
	}{
		{"settled", testPlacement(2, true), []*clusterv1beta1.PlacementDecision{testDecision("d1", "p-uid", "a"), testDecision("d2", "p-uid", "b")}, Ready, 2},
		{"pages without an owner are the placement's", testPlacement(1, true), []*clusterv1beta1.PlacementDecision{testDecision("d1", "", "a")}, Ready, 1},
		{"a cluster on two pages counts once", testPlacement(1, true), []*clusterv1beta1.PlacementDecision{testDecision("d1", "p-uid", "a"), testDecision("d2", "p-uid", "a")}, Ready, 2},
		{"one short of the status: in flux", testPlacement(2, true), []*clusterv1beta1.PlacementDecision{testDecision("d1", "p-uid", "a")}, InFlux, 1},
		{"one more than the status: in flux", testPlacement(1, true), []*clusterv1beta1.PlacementDecision{testDecision("d1", "p-uid", "a", "b")}, InFlux, 1},
		{"predecessor's page dropped", testPlacement(1, true), []*clusterv1beta1.PlacementDecision{testDecision("d1", "old", "a"), testDecision("d2", "p-uid", "b")}, Ready, 1},
		{"never scheduled: unknown", testPlacement(0, false), nil, Unknown, 0},
		{"spec changed, not rescheduled yet: unknown", stale, []*clusterv1beta1.PlacementDecision{testDecision("d1", "p-uid", "a", "b")}, Unknown, 1},
		{"scheduling disabled: trusted as listed", disabled, []*clusterv1beta1.PlacementDecision{testDecision("d1", "", "a")}, Ready, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ds []clusterv1beta1.PlacementDecision
			for _, d := range tc.decisions {
				ds = append(ds, *d)
			}
			got, why, own := Check(tc.p, ds)
			assert.Equal(t, tc.want, got, why)
			assert.Len(t, own, tc.own)
			if got != Ready {
				assert.NotEmpty(t, why)
			}
		})
	}
}

func page(group int, name string, clusters ...string) clusterv1beta1.PlacementDecision {
	d := *testDecision("d"+strconv.Itoa(group), "p-uid", clusters...)
	d.Labels[clusterv1beta1.DecisionGroupIndexLabel] = strconv.Itoa(group)
	d.Labels[clusterv1beta1.DecisionGroupNameLabel] = name
	return d
}

func TestClusters(t *testing.T) {
	noIndex := *testDecision("x", "", "z")
	delete(noIndex.Labels, clusterv1beta1.DecisionGroupIndexLabel)
	tests := []struct {
		name  string
		pages []clusterv1beta1.PlacementDecision
		want  []Cluster
	}{
		{"none", nil, nil},
		{"in page order, with their groups",
			[]clusterv1beta1.PlacementDecision{page(0, "canary", "b", "a"), page(1, "", "c")},
			[]Cluster{{Name: "b", GroupName: "canary"}, {Name: "a", GroupName: "canary"}, {Name: "c", GroupIndex: 1}}},
		{"a cluster on two pages counts once, in the first page's group",
			[]clusterv1beta1.PlacementDecision{page(2, "late", "a"), page(1, "", "a", "b")},
			[]Cluster{{Name: "a", GroupIndex: 2, GroupName: "late"}, {Name: "b", GroupIndex: 1}}},
		{"a page without a group index is group 0", []clusterv1beta1.PlacementDecision{noIndex}, []Cluster{{Name: "z"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Clusters(tc.pages))
		})
	}
}

func TestRead(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	other := testDecision("other", "p-uid", "elsewhere")
	other.Labels[clusterv1beta1.PlacementLabel] = "another"
	settled := []client.Object{testPlacement(2, true), testDecision("d1", "p-uid", "a", "b"), testDecision("d2", "old", "gone"), other}
	tests := []struct {
		name      string
		objs      []client.Object
		funcs     interceptor.Funcs
		found     bool
		readiness Readiness
		clusters  []Cluster
		own       int
		listErr   bool // a *ReadError with Decisions
		getErr    bool // a *ReadError without
	}{
		{name: "missing: not found, no error"},
		{name: "settled: its own pages' clusters, ready", objs: settled, found: true, readiness: Ready, own: 1,
			clusters: []Cluster{{Name: "a"}, {Name: "b"}}},
		{name: "not scheduled: unknown", objs: []client.Object{testPlacement(0, false)}, found: true, readiness: Unknown},
		{name: "short of the status: in flux", objs: []client.Object{testPlacement(3, true), testDecision("d1", "p-uid", "a")}, found: true,
			readiness: InFlux, own: 1, clusters: []Cluster{{Name: "a"}}},
		{name: "get fails", objs: settled, getErr: true, funcs: interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return boom
			}}},
		{name: "list fails", objs: settled, found: true, listErr: true, funcs: interceptor.Funcs{
			List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error { return boom }}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(tc.objs...).WithInterceptorFuncs(tc.funcs).Build()
			d, err := Read(ctx, c, ns, "all")
			if tc.getErr || tc.listErr {
				var re *ReadError
				require.ErrorAs(t, err, &re)
				assert.ErrorIs(t, err, boom)
				assert.Equal(t, tc.listErr, re.Decisions)
				if tc.listErr {
					assert.Equal(t, "list PlacementDecisions of default/all: boom", err.Error())
				} else {
					assert.Equal(t, "get Placement default/all: boom", err.Error())
				}
				assert.Equal(t, boom, Cause(err))
				assert.Equal(t, tc.found, d.Found)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.found, d.Found)
			if !tc.found {
				return
			}
			assert.Equal(t, "all", d.Placement.Name)
			assert.Equal(t, tc.readiness, d.Readiness, d.Reason)
			assert.Equal(t, tc.readiness != Ready, d.Reason != "", "a reason for anything but Ready")
			assert.Len(t, d.Own, tc.own)
			assert.Equal(t, tc.clusters, d.Clusters)
		})
	}
	assert.Equal(t, boom, Cause(boom), "an error that is not a *ReadError is its own cause")
}
