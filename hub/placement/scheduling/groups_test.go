package scheduling

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

type groupView struct {
	Index    int32
	Name     string
	Clusters []string
}

func viewGroups(gs []Group) []groupView {
	var out []groupView
	for _, g := range gs {
		out = append(out, groupView{Index: g.Index, Name: g.Name, Clusters: names(g.Clusters)})
	}
	return out
}

func TestDecisionGroups(t *testing.T) {
	fleet := []*clusterv1.ManagedCluster{
		st.Cluster("c1").Label("canary", "true").Obj(),
		st.Cluster("c2").Obj(),
		st.Cluster("c3").Label("canary", "true").Obj(),
		st.Cluster("c4").Obj(),
		st.Cluster("c5").Obj(),
	}
	tests := []struct {
		name      string
		placement *clusterv1beta1.Placement
		want      []groupView
	}{
		{"default: one group with everything", st.Placement("p", ns).Obj(),
			[]groupView{{0, "", []string{"c1", "c2", "c3", "c4", "c5"}}}},
		{"count", st.Placement("p", ns).PerGroup("2").Obj(),
			[]groupView{{0, "", []string{"c1", "c2"}}, {1, "", []string{"c3", "c4"}}, {2, "", []string{"c5"}}}},
		{"percent rounds up", st.Placement("p", ns).PerGroup("50%").Obj(),
			[]groupView{{0, "", []string{"c1", "c2", "c3"}}, {1, "", []string{"c4", "c5"}}}},
		{"predefined group first, rest after", st.Placement("p", ns).Group("canary", map[string]string{"canary": "true"}).Obj(),
			[]groupView{{0, "canary", []string{"c1", "c3"}}, {1, "", []string{"c2", "c4", "c5"}}}},
		{"predefined group split by count", st.Placement("p", ns).Group("canary", map[string]string{"canary": "true"}).PerGroup("1").Obj(),
			[]groupView{{0, "canary", []string{"c1"}}, {1, "canary", []string{"c3"}}, {2, "", []string{"c2"}}, {3, "", []string{"c4"}}, {4, "", []string{"c5"}}}},
		{"a cluster goes to the first group that selects it", st.Placement("p", ns).
			Group("canary", map[string]string{"canary": "true"}).Group("all", nil).Obj(),
			[]groupView{{0, "canary", []string{"c1", "c3"}}, {1, "all", []string{"c2", "c4", "c5"}}}},
		{"a group matching nothing is skipped", st.Placement("p", ns).Group("none", map[string]string{"x": "y"}).Obj(),
			[]groupView{{0, "", []string{"c1", "c2", "c3", "c4", "c5"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := Schedule(world{clusters: fleet}.snapshot(), tc.placement)
			require.NoError(t, res.Misconfigured)
			assert.Equal(t, tc.want, viewGroups(res.Groups))
		})
	}
}

func TestPaginate(t *testing.T) {
	var big []Decision
	for i := range 250 {
		big = append(big, Decision{ClusterName: fmt.Sprintf("c%03d", i), Score: int64(i)})
	}
	t.Run("empty result still has one decision object", func(t *testing.T) {
		pages := Paginate("p", []Group{{Index: 0}}, false)
		require.Len(t, pages, 1)
		assert.Equal(t, "p-decision-1", pages[0].Name)
		assert.Empty(t, pages[0].Decisions)
		assert.NotNil(t, pages[0].Decisions, "decisions is [] not null (the CRD requires the field)")
		assert.Equal(t, map[string]string{
			clusterv1beta1.PlacementLabel:          "p",
			clusterv1beta1.DecisionGroupIndexLabel: "0",
			clusterv1beta1.DecisionGroupNameLabel:  "",
		}, pages[0].Labels)
	})
	t.Run("at most 100 per object, numbered from 1 across groups", func(t *testing.T) {
		pages := Paginate("p", []Group{{Index: 0, Name: "a", Clusters: big[:150]}, {Index: 1, Clusters: big[150:]}}, false)
		var sizes []int
		var got []string
		for _, pg := range pages {
			sizes = append(sizes, len(pg.Decisions))
			got = append(got, pg.Name+"/"+pg.Labels[clusterv1beta1.DecisionGroupIndexLabel]+"/"+pg.Labels[clusterv1beta1.DecisionGroupNameLabel])
			for _, d := range pg.Decisions {
				assert.Zero(t, d.Score)
			}
		}
		assert.Equal(t, []int{100, 50, 100}, sizes)
		assert.Equal(t, []string{"p-decision-1/0/a", "p-decision-2/0/a", "p-decision-3/1/"}, got)
	})
	t.Run("scores recorded on request", func(t *testing.T) {
		pages := Paginate("p", []Group{{Clusters: big[1:3]}}, true)
		assert.Equal(t, int64(1), pages[0].Decisions[0].Score)
	})
}
