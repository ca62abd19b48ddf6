package scheduling

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

func TestRank(t *testing.T) {
	prefer := clusterv1.TaintEffectPreferNoSelect
	tests := []struct {
		name        string
		clusters    []*clusterv1.ManagedCluster
		scores      []int64
		tolerations []clusterv1beta1.Toleration
		want        []string
	}{
		{"highest score first", clusters("a", "b", "c"), []int64{1, 3, 2}, nil, []string{"b", "c", "a"}},
		{"equal scores by name", clusters("c", "a", "b"), []int64{5, 5, 5}, nil, []string{"a", "b", "c"}},
		{"negative scores", clusters("a", "b"), []int64{-100, -5}, nil, []string{"b", "a"}},
		{"an untolerated PreferNoSelect taint last, whatever its score",
			[]*clusterv1.ManagedCluster{st.Cluster("a").Taint("k", "v", prefer, now).Obj(), st.Cluster("b").Obj()},
			[]int64{100, -100}, nil, []string{"b", "a"}},
		{"a tolerated one ranks by score",
			[]*clusterv1.ManagedCluster{st.Cluster("a").Taint("k", "v", prefer, now).Obj(), st.Cluster("b").Obj()},
			[]int64{100, -100}, []clusterv1beta1.Toleration{{Key: "k", Operator: clusterv1beta1.TolerationOpExists}}, []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			infos := NewClusterInfos(tc.clusters, nil)
			var got []string
			for _, r := range rank(infos, tc.scores, tc.tolerations, now) {
				got = append(got, r.info.Name())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSetMembers(t *testing.T) {
	infos := NewClusterInfos([]*clusterv1.ManagedCluster{
		st.Cluster("a").Set("blue").Label("env", "prod").Obj(),
		st.Cluster("b").Set("red").Obj(),
		st.Cluster("c").Set("blue").Obj(),
		st.Cluster("d").Label("env", "prod").Obj(),
	}, nil)
	broken := st.Set("broken", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Bogus"}}})
	got := SetMembers(infos, []*clusterv1beta2.ManagedClusterSet{
		st.Set("blue", nil), st.Set("red", nil), st.Set("empty", nil),
		st.Set("prod", &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}),
		st.Set("global", &metav1.LabelSelector{}), broken,
	})
	assert.Equal(t, map[string][]int{"blue": {0, 2}, "red": {1}, "empty": {}, "prod": {0, 3}, "global": {0, 1, 2, 3}, "broken": {}}, got)
}

// A snapshot with the members computed once (as the controller shares them
// between passes) decides as one that computes them in the pass.
func TestScheduleWithSharedMembers(t *testing.T) {
	cs := []*clusterv1.ManagedCluster{
		st.Cluster("a").Set("blue").Label("env", "prod").Allocatable("4", "1Gi").Obj(),
		st.Cluster("b").Set("red").Allocatable("8", "1Gi").Obj(),
		st.Cluster("c").Set("blue").Allocatable("2", "1Gi").Obj(),
		st.Cluster("d").Label("env", "prod").Allocatable("6", "1Gi").Obj(),
		st.Cluster("e").Set("red").Pending().Obj(),
	}
	gone := st.Cluster("f").Set("blue").Obj()
	gone.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Minute)}
	cs = append(cs, gone)
	sets := []*clusterv1beta2.ManagedClusterSet{st.Set("blue", nil), st.Set("red", nil),
		st.Set("prod", &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}), st.Set("global", &metav1.LabelSelector{})}
	bindings := []*clusterv1beta2.ManagedClusterSetBinding{st.Binding("blue", ns), st.Binding("red", ns), st.Binding("prod", ns)}
	placements := []*clusterv1beta1.Placement{
		st.Placement("all", ns).Obj(),
		st.Placement("two", ns).Number(2).Prioritizer("ResourceAllocatableCPU", 1).Obj(),
		st.Placement("blue", ns).Sets("blue").Obj(),
		st.Placement("blue-prod", ns).Sets("blue", "prod").Number(3).Obj(),
		st.Placement("unbound", ns).Sets("global").Obj(),
		st.Placement("sorted", ns).SortByScore().Prioritizer("ResourceAllocatableCPU", 2).Obj(),
	}
	for _, p := range placements {
		t.Run(p.Name, func(t *testing.T) {
			infos := NewClusterInfos(cs, nil)
			perPass := &Snapshot{Clusters: infos, ClusterSets: sets, Bindings: bindings, Now: now}
			shared := *perPass
			shared.Members = SetMembers(infos, sets)
			assert.Equal(t, Schedule(perPass, p), Schedule(&shared, p))
		})
	}
}

// The shared snapshot's clusters are not changed by a pass.
func TestScheduleLeavesTheSnapshot(t *testing.T) {
	infos := NewClusterInfos(clusters("c", "a", "b"), nil)
	before := append([]*framework.ClusterInfo(nil), infos...)
	snap := &Snapshot{Clusters: infos, ClusterSets: []*clusterv1beta2.ManagedClusterSet{st.Set("default", nil)},
		Bindings: []*clusterv1beta2.ManagedClusterSetBinding{st.Binding("default", ns)}, Now: now}
	snap.Members = SetMembers(infos, snap.ClusterSets)
	res := Schedule(snap, st.Placement("p", ns).Number(2).Obj())
	assert.Equal(t, []string{"a", "b"}, names(res.Decisions))
	assert.Equal(t, before, snap.Clusters)
}
