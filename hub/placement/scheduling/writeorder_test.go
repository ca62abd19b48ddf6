package scheduling

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// pg builds a page "p-decision-N" of group g listing clusters.
func pg(n int, g string, clusters ...string) Page {
	p := Page{Name: fmt.Sprintf("p-decision-%d", n), Labels: map[string]string{
		clusterv1beta1.PlacementLabel: "p", clusterv1beta1.DecisionGroupIndexLabel: g, clusterv1beta1.DecisionGroupNameLabel: ""},
		Decisions: []clusterv1beta1.ClusterDecision{}}
	for _, c := range clusters {
		p.Decisions = append(p.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
	}
	return p
}

// replay applies writes and deletes to previous one at a time, the way a reader
// between two writes would see them, and fails when a cluster decided before and
// after is on no page. It returns the final state as "name[group]: a,b".
func replay(t *testing.T, previous, next []Page, writes []Page, deletes []string) []string {
	t.Helper()
	state := map[string]Page{}
	for _, p := range previous {
		state[p.Name] = p
	}
	clusters := func(pages []Page) map[string]bool {
		out := map[string]bool{}
		for _, p := range pages {
			for _, d := range p.Decisions {
				out[d.ClusterName] = true
			}
		}
		return out
	}
	before, after := clusters(previous), clusters(next)
	check := func(step string) {
		var pages []Page
		for _, p := range state {
			pages = append(pages, p)
		}
		now := clusters(pages)
		for c := range before {
			if after[c] {
				require.True(t, now[c], "cluster %s is on no page after %s", c, step)
			}
		}
	}
	for _, w := range writes {
		state[w.Name] = w
		check("writing " + w.Name)
	}
	for _, d := range deletes {
		delete(state, d)
		check("deleting " + d)
	}
	return render(state)
}

func render(state map[string]Page) []string {
	var out []string
	for _, p := range state {
		var names []string
		for _, d := range p.Decisions {
			names = append(names, d.ClusterName)
		}
		out = append(out, fmt.Sprintf("%s[%s]: %s", p.Name, p.Labels[clusterv1beta1.DecisionGroupIndexLabel], strings.Join(names, ",")))
	}
	sort.Strings(out)
	return out
}

func renderPages(pages []Page) []string {
	state := map[string]Page{}
	for _, p := range pages {
		state[p.Name] = p
	}
	return render(state)
}

func TestPageWrites(t *testing.T) {
	tests := []struct {
		name     string
		previous []Page
		next     []Page
		writes   []string // "name: clusters" in write order
		deletes  []string
	}{
		{"no change, no write",
			[]Page{pg(1, "0", "a", "b")}, []Page{pg(1, "0", "a", "b")}, nil, nil},
		{"a new placement writes its pages",
			nil, []Page{pg(1, "0", "a"), pg(2, "1", "b")}, []string{"p-decision-1: a", "p-decision-2: b"}, nil},
		{"one cluster joins: one write",
			[]Page{pg(1, "0", "a"), pg(2, "0", "c")}, []Page{pg(1, "0", "a", "b"), pg(2, "0", "c")}, []string{"p-decision-1: a,b"}, nil},
		{"one cluster leaves: one write",
			[]Page{pg(1, "0", "a", "b"), pg(2, "0", "c")}, []Page{pg(1, "0", "a"), pg(2, "0", "c")}, []string{"p-decision-1: a"}, nil},
		{"a cluster moves to a later page: the later page gains it first",
			[]Page{pg(1, "0", "a", "b"), pg(2, "0", "c")}, []Page{pg(1, "0", "a"), pg(2, "0", "b", "c")},
			[]string{"p-decision-2: b,c", "p-decision-1: a"}, nil},
		{"two clusters swap pages (scores reordered): both pages list both, then settle",
			[]Page{pg(1, "0", "a", "b"), pg(2, "0", "c", "d")}, []Page{pg(1, "0", "a", "c"), pg(2, "0", "b", "d")},
			[]string{"p-decision-1: a,c,b", "p-decision-2: b,d,c", "p-decision-1: a,c", "p-decision-2: b,d"}, nil},
		{"a cluster changes decision group",
			[]Page{pg(1, "0", "a", "b"), pg(2, "1", "c")}, []Page{pg(1, "0", "a"), pg(2, "1", "b", "c")},
			[]string{"p-decision-2: b,c", "p-decision-1: a"}, nil},
		{"a page goes, its cluster moves to a page that stays: deleted last",
			[]Page{pg(1, "0", "a"), pg(2, "0", "b")}, []Page{pg(1, "0", "a", "b")},
			[]string{"p-decision-1: a,b"}, []string{"p-decision-2"}},
		{"a cluster leaves while another moves",
			[]Page{pg(1, "0", "a", "x"), pg(2, "0", "c")}, []Page{pg(1, "0", "c"), pg(2, "0", "a")},
			[]string{"p-decision-1: c,a", "p-decision-2: a,c", "p-decision-1: c", "p-decision-2: a"}, nil},
		{"a page relabelled to another group keeps its staying clusters",
			[]Page{pg(1, "0", "a")}, []Page{pg(1, "1", "a")}, []string{"p-decision-1: a"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			writes, deletes := PageWrites(tc.previous, tc.next)
			var got []string
			for _, w := range writes {
				var names []string
				for _, d := range w.Decisions {
					names = append(names, d.ClusterName)
				}
				got = append(got, w.Name+": "+strings.Join(names, ","))
			}
			assert.Equal(t, tc.writes, got)
			assert.Equal(t, tc.deletes, deletes)
			assert.Equal(t, renderPages(tc.next), replay(t, tc.previous, tc.next, writes, deletes), "ends at next")
		})
	}
}

// TestPageWritesNeverDropsAStayingCluster replays random reshuffles (clusters
// joining, leaving, moving between pages and groups, pages appearing and going).
func TestPageWritesNeverDropsAStayingCluster(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	layoutOf := func() []Page {
		var pages []Page
		for n := 1; n <= 4; n++ {
			if rng.Intn(4) == 0 {
				continue // page absent
			}
			pages = append(pages, pg(n, fmt.Sprint(rng.Intn(2))))
		}
		if len(pages) == 0 {
			return nil
		}
		for _, c := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			if rng.Intn(3) == 0 {
				continue // not decided
			}
			i := rng.Intn(len(pages))
			pages[i].Decisions = append(pages[i].Decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
		}
		return pages
	}
	for i := 0; i < 2000; i++ {
		previous, next := layoutOf(), layoutOf()
		writes, deletes := PageWrites(previous, next)
		require.Equal(t, renderPages(next), replay(t, previous, next, writes, deletes), "case %d ends at next", i)
	}
}
