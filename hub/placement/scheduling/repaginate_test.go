package scheduling

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

func decisionsOf(names ...string) []Decision {
	var out []Decision
	for _, n := range names {
		out = append(out, Decision{ClusterName: n})
	}
	return out
}

func seq(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%03d", prefix, i))
	}
	return out
}

// layout renders pages as "name[group]: first..last (n)".
func layout(pages []Page) []string {
	var out []string
	for _, p := range pages {
		first, last := "", ""
		if len(p.Decisions) > 0 {
			first, last = p.Decisions[0].ClusterName, p.Decisions[len(p.Decisions)-1].ClusterName
		}
		out = append(out, fmt.Sprintf("%s[%s]: %s..%s (%d)", p.Name, p.Labels[clusterv1beta1.DecisionGroupIndexLabel], first, last, len(p.Decisions)))
	}
	return out
}

func TestRepaginate(t *testing.T) {
	c150 := seq("c", 100, 250) // c100..c249
	initial := Paginate("p", []Group{{Clusters: decisionsOf(c150...)}}, false)
	assert.Equal(t, []string{"p-decision-1[0]: c100..c199 (100)", "p-decision-2[0]: c200..c249 (50)"}, layout(initial))

	t.Run("a newcomer that sorts first goes to the page with room", func(t *testing.T) {
		got := Repaginate("p", []Group{{Clusters: decisionsOf(append([]string{"a000"}, c150...)...)}}, false, initial)
		assert.Equal(t, []string{"p-decision-1[0]: c100..c199 (100)", "p-decision-2[0]: a000..c249 (51)"}, layout(got))
		assert.Equal(t, initial[0].Decisions, got[0].Decisions, "page 1 is untouched")
	})
	t.Run("a leaver vacates its slot only", func(t *testing.T) {
		got := Repaginate("p", []Group{{Clusters: decisionsOf(c150[1:]...)}}, false, initial)
		assert.Equal(t, []string{"p-decision-1[0]: c101..c199 (99)", "p-decision-2[0]: c200..c249 (50)"}, layout(got))
		assert.Equal(t, initial[1].Decisions, got[1].Decisions, "page 2 is untouched")
	})
	t.Run("full pages overflow into a new page", func(t *testing.T) {
		full := Paginate("p", []Group{{Clusters: decisionsOf(seq("c", 0, 100)...)}}, false)
		got := Repaginate("p", []Group{{Clusters: decisionsOf(append([]string{"a"}, seq("c", 0, 100)...)...)}}, false, full)
		assert.Equal(t, []string{"p-decision-1[0]: c000..c099 (100)", "p-decision-2[0]: a..a (1)"}, layout(got))
	})
	t.Run("an emptied page goes, the group keeps one", func(t *testing.T) {
		got := Repaginate("p", []Group{{Clusters: decisionsOf(c150[:100]...)}}, false, initial)
		assert.Equal(t, []string{"p-decision-1[0]: c100..c199 (100)"}, layout(got))
		got = Repaginate("p", []Group{{}}, false, initial)
		assert.Equal(t, []string{"p-decision-1[0]: .. (0)"}, layout(got))
	})
	t.Run("fragmented groups are laid out afresh", func(t *testing.T) {
		frag := []Page{
			{Name: "p-decision-1", Labels: initial[0].Labels, Decisions: initial[0].Decisions[:10]},
			{Name: "p-decision-2", Labels: initial[0].Labels, Decisions: initial[1].Decisions[:10]},
			{Name: "p-decision-3", Labels: initial[0].Labels, Decisions: initial[0].Decisions[50:60]},
		}
		var keep []string
		for _, pg := range frag {
			for _, d := range pg.Decisions {
				keep = append(keep, d.ClusterName)
			}
		}
		got := Repaginate("p", []Group{{Clusters: decisionsOf(keep...)}}, false, frag)
		assert.Len(t, got, 1)
		assert.Equal(t, "p-decision-1", got[0].Name)
		assert.Len(t, got[0].Decisions, 30)
	})
	t.Run("groups keep their own pages; new groups take unused numbers", func(t *testing.T) {
		two := Paginate("p", []Group{{Index: 0, Name: "canary", Clusters: decisionsOf("a", "b")}, {Index: 1, Clusters: decisionsOf("c")}}, false)
		got := Repaginate("p", []Group{
			{Index: 0, Name: "canary", Clusters: decisionsOf("a")},
			{Index: 1, Clusters: decisionsOf("b", "c")},
			{Index: 2, Clusters: decisionsOf("d")},
		}, false, two)
		assert.Equal(t, []string{"p-decision-1[0]: a..a (1)", "p-decision-2[1]: b..c (2)", "p-decision-3[2]: d..d (1)"}, layout(got))
		assert.Equal(t, "canary", got[0].Labels[clusterv1beta1.DecisionGroupNameLabel])
	})
	t.Run("scores order pages afresh", func(t *testing.T) {
		got := Repaginate("p", []Group{{Clusters: decisionsOf(append([]string{"a000"}, c150...)...)}}, true, initial)
		assert.Equal(t, []string{"p-decision-1[0]: a000..c198 (100)", "p-decision-2[0]: c199..c249 (51)"}, layout(got))
	})
	t.Run("no previous pages: same as Paginate", func(t *testing.T) {
		assert.Equal(t, initial, Repaginate("p", []Group{{Clusters: decisionsOf(c150...)}}, false, nil))
	})
}
