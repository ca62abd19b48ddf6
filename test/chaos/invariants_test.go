package chaos

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestEnabled(t *testing.T) {
	gr := schema.GroupResource{Group: "addon.open-cluster-management.io", Resource: "managedclusteraddons"}
	exists := apierrors.NewAlreadyExists(gr, "example")
	live := &metav1.ObjectMeta{Name: "example"}
	leaving := &metav1.ObjectMeta{Name: "example", DeletionTimestamp: &metav1.Time{Time: time.Unix(1, 0)},
		Finalizers: []string{"cluster.open-cluster-management.io/addon-pre-delete"}}
	tests := []struct {
		name     string
		err      error
		existing metav1.Object
		want     bool
	}{
		{"created", nil, nil, true},
		{"there already (an earlier create landed)", exists, live, true},
		// The 30-minute run of 2026-11-24 counted this as enabled; the
		// object was gone a moment later and the run saw no convergence.
		{"there, but being deleted after a disable", exists, leaving, false},
		{"there, but unreadable", exists, nil, false},
		{"refused (hub down)", apierrors.NewServiceUnavailable("etcd is down"), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Enabled(tt.err, tt.existing))
		})
	}
}

func TestLeasePeriod(t *testing.T) {
	five, sixty := int32(5), int32(60)
	assert.Empty(t, LeasePeriod("c1", 5, &five), "renewed at the period asked for")
	v := LeasePeriod("c1", 5, &sixty)
	if assert.Len(t, v, 1) {
		assert.Equal(t, Stale, v[0].Kind)
		assert.Equal(t, "c1 renews its lease with 60 s, its ManagedCluster asks for 5 s", v[0].Message)
	}
	assert.Len(t, LeasePeriod("c1", 5, nil), 1, "a lease never renewed")
}

func TestCheck(t *testing.T) {
	cm := func(cluster, name string, data map[string]string) Object {
		return Object{Cluster: cluster, Namespace: "default", Name: name, Data: data, Work: name}
	}
	v1 := map[string]string{"cluster": "c1", "version": "1"}
	v2 := map[string]string{"cluster": "c1", "version": "2"}
	tests := []struct {
		name     string
		expected []Object
		observed []Object
		want     []ViolationKind
	}{
		{"converged", []Object{cm("c1", "a", v1)}, []Object{cm("c1", "a", v1)}, nil},
		{"nothing at all", nil, nil, nil},
		{"missing on the cluster", []Object{cm("c1", "a", v1)}, nil, []ViolationKind{Missing}},
		{"old spec on the cluster", []Object{cm("c1", "a", v2)}, []Object{cm("c1", "a", v1)}, []ViolationKind{Drift}},
		{"deleted work left its object", nil, []Object{cm("c1", "a", v1)}, []ViolationKind{Leftover}},
		{"applied by the wrong cluster", []Object{cm("c1", "a", v1)}, []Object{cm("c1", "a", v1), cm("c2", "a", v1)},
			[]ViolationKind{WrongCluster, Leftover}},
		{"replica-set objects carry no cluster", []Object{cm("c2", "rs", map[string]string{"version": "3"})},
			[]Object{cm("c2", "rs", map[string]string{"version": "3"})}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []ViolationKind
			for _, v := range Check(tt.expected, tt.observed) {
				got = append(got, v.Kind)
				assert.NotEmpty(t, v.Message)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPanicLines(t *testing.T) {
	log := "I1124 all fine\npanic: runtime error: index out of range\n\tgoroutine 1\n" +
		"E1124 Observed a panic: nil map\nfatal error: concurrent map writes\nI1124 the word panic: in a message is not at the start\n"
	assert.Equal(t, []string{"panic: runtime error: index out of range", "E1124 Observed a panic: nil map",
		"fatal error: concurrent map writes"}, PanicLines(log))
	assert.Empty(t, PanicLines("I1124 nothing to see\n"))
	// Pod logs of the nodes mode, in the CRI format.
	cri := "2026-11-24T16:30:00.123456789Z stderr F I1124 fine\n2026-11-24T16:30:01.5Z stderr F panic: assignment to entry in nil map\n" +
		"2026-11-24T16:30:01.6Z stdout F the word panic: not at the start\n"
	assert.Equal(t, []string{"panic: assignment to entry in nil map"}, PanicLines(cri))
}

func TestHeld(t *testing.T) {
	since := time.Date(2026, 11, 24, 19, 24, 44, 0, time.UTC)
	v1 := map[string]string{"cluster": "c2", "version": "1"}
	wanted := Object{Cluster: "c2", Namespace: "default", Name: "a", Data: v1, Work: "a"}
	stray := Object{Cluster: "c2", Namespace: "default", Name: "b", Data: v1}
	held := Object{Cluster: "c2", Namespace: "default", Name: "c", Data: v1, HeldSince: since}
	// Held, but a live work wants it again: compared as usual.
	heldWanted := Object{Cluster: "c2", Namespace: "default", Name: "a", Data: v1, HeldSince: since}

	rest, h := Held([]Object{wanted}, []Object{heldWanted, stray, held})
	assert.Equal(t, []Object{heldWanted, stray}, rest)
	if assert.Len(t, h, 1) {
		v := h["c2/default/c"]
		assert.Equal(t, Leftover, v.Kind)
		assert.Contains(t, v.Message, "ConfigMap default/c on c2 is wanted by no work")
		assert.Contains(t, v.Message, "eviction started 19:24:44")
	}
	// What is not held is still a leftover at once.
	assert.Equal(t, []Violation{{Leftover, "ConfigMap default/b on c2 is wanted by no work"}}, Check([]Object{wanted}, rest))
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	assert.Equal(t, time.Duration(3), Percentile(ds, 50))
	assert.Equal(t, time.Duration(5), Percentile(ds, 99))
	assert.Equal(t, time.Duration(1), Percentile(ds, 0))
	assert.Equal(t, time.Duration(0), Percentile(nil, 50))
}

func TestMemoryAdd(t *testing.T) {
	var m Memory
	run := 30 * time.Minute
	m.Add(50, -time.Minute, run) // during setup: the first third
	m.Add(40, time.Minute, run)
	m.Add(90, 15*time.Minute, run)
	m.Add(70, 29*time.Minute, run)
	m.Add(75, 31*time.Minute, run) // the final convergence: the last third
	assert.Equal(t, Memory{Peak: 90, Thirds: [3]int64{50, 90, 75}}, m)
	assert.Equal(t, int64(25), m.Growth())
}

func TestReportWrite(t *testing.T) {
	r := Report{Duration: 3 * time.Minute, Clusters: 2,
		Ops: map[string]int{"create": 10, "update": 20, "delete": 5, "rollout": 2, "update-failed": 1, "rotation": 3},
		Faults: []Fault{{Kind: "hub", Target: "hub", Restart: time.Second, Converge: 800 * time.Millisecond, Converged: true},
			{Kind: "klusterlet", Target: "klusterlet-cluster1", Restart: 2 * time.Second, Converged: false}},
		Memory:     map[string]Memory{"hub/flotilla": {Peak: 80 << 20, Thirds: [3]int64{60 << 20, 80 << 20, 64 << 20}}},
		Violations: []Violation{{NoConvergence, "klusterlet-cluster1: not converged within 3m"}},
	}
	var b bytes.Buffer
	r.Write(&b)
	out := b.String()
	assert.Contains(t, out, "chaos run: 3m0s, 2 managed clusters")
	assert.Regexp(t, `update\s+20\s+1`, out)
	assert.Regexp(t, `new hub certificate\s+3\s+-`, out)
	assert.Regexp(t, `hub\s+1\s+1.0 s\s+800 ms\s+800 ms\s+0`, out)
	assert.Regexp(t, `klusterlet\s+1\s+2.0 s\s+-\s+-\s+1`, out)
	assert.Regexp(t, `hub/flotilla\s+80 MiB\s+60 MiB\s+64 MiB\s+\+4 MiB`, out)
	assert.Contains(t, out, "invariant violations: 1")
	assert.Contains(t, out, "no-convergence: klusterlet-cluster1")
}

func TestSearchCheck(t *testing.T) {
	obj := func(cluster, name, version string) Object {
		return Object{Cluster: cluster, Namespace: "default", Name: name, Data: map[string]string{"version": version}}
	}
	assert.Empty(t, SearchCheck([]Object{obj("c1", "a", "1"), obj("c2", "a", "2")}, []Object{obj("c2", "a", "2"), obj("c1", "a", "1")}))
	v := SearchCheck([]Object{obj("c1", "a", "2"), obj("c1", "b", "1")}, []Object{obj("c1", "a", "1"), obj("c2", "b", "1")})
	require.Len(t, v, 3)
	assert.Equal(t, Search, v[0].Kind)
	assert.Contains(t, v[0].Message, "c1/default/a: the index has data")
	assert.Contains(t, v[1].Message, "c1/default/b is on its cluster and not in the search index")
	assert.Contains(t, v[2].Message, "c2/default/b is in the search index and not on its cluster")
}
