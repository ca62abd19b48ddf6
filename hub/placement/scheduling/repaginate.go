package scheduling

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// Repaginate is Paginate that remembers: clusters that stay in a decision group
// stay on the PlacementDecision they were on, clusters that leave vacate their
// slot, and new clusters fill pages that have room before new pages are made. So
// one cluster joining or leaving rewrites one PlacementDecision, not every page
// after it. Each page stays sorted by cluster name.
//
// previous are the placement's current pages. It falls back to Paginate (fresh,
// name-sorted pages) when there are none, when scores order the decisions
// (withScores), or when a group has become fragmented (more pages than it needs
// plus one). New pages take the next unused number.
func Repaginate(placement string, groups []Group, withScores bool, previous []Page) []Page {
	if len(previous) == 0 || withScores {
		return Paginate(placement, groups, withScores)
	}
	used := map[int]bool{}
	for _, pg := range previous {
		if n, ok := pageNumber(placement, pg.Name); ok {
			used[n] = true
		}
	}
	next := 1
	newName := func() string {
		for used[next] {
			next++
		}
		used[next] = true
		return fmt.Sprintf("%s-decision-%d", placement, next)
	}

	var out []Page
	taken := map[string]bool{} // previous pages already given to a group
	for _, g := range groups {
		labels := map[string]string{
			clusterv1beta1.PlacementLabel:          placement,
			clusterv1beta1.DecisionGroupIndexLabel: strconv.Itoa(int(g.Index)),
			clusterv1beta1.DecisionGroupNameLabel:  g.Name,
		}
		members := map[string]bool{}
		for _, d := range g.Clusters {
			members[d.ClusterName] = true
		}
		// The group's previous pages, in page-number order.
		var mine []Page
		for _, pg := range previous {
			if !taken[pg.Name] && pg.Labels[clusterv1beta1.DecisionGroupIndexLabel] == labels[clusterv1beta1.DecisionGroupIndexLabel] &&
				pg.Labels[clusterv1beta1.DecisionGroupNameLabel] == g.Name {
				mine = append(mine, pg)
			}
		}
		sort.SliceStable(mine, func(i, j int) bool {
			a, _ := pageNumber(placement, mine[i].Name)
			b, _ := pageNumber(placement, mine[j].Name)
			return a < b
		})
		// Keep staying clusters where they were.
		placed := map[string]bool{}
		var pages []Page
		for _, pg := range mine {
			taken[pg.Name] = true
			kept := Page{Name: pg.Name, Labels: labels, Decisions: []clusterv1beta1.ClusterDecision{}}
			for _, d := range pg.Decisions {
				if members[d.ClusterName] && !placed[d.ClusterName] && len(kept.Decisions) < MaxDecisionsPerObject {
					placed[d.ClusterName] = true
					kept.Decisions = append(kept.Decisions, clusterv1beta1.ClusterDecision{ClusterName: d.ClusterName})
				}
			}
			pages = append(pages, kept)
		}
		// Newcomers fill pages with room, then new pages.
		for _, d := range g.Clusters {
			if placed[d.ClusterName] {
				continue
			}
			i := 0
			for i < len(pages) && len(pages[i].Decisions) >= MaxDecisionsPerObject {
				i++
			}
			if i == len(pages) {
				pages = append(pages, Page{Name: newName(), Labels: labels, Decisions: []clusterv1beta1.ClusterDecision{}})
			}
			pages[i].Decisions = append(pages[i].Decisions, clusterv1beta1.ClusterDecision{ClusterName: d.ClusterName})
		}
		// Drop emptied pages, keeping one so the group is never without a page.
		var nonEmpty []Page
		for _, pg := range pages {
			if len(pg.Decisions) > 0 {
				nonEmpty = append(nonEmpty, pg)
			}
		}
		if len(nonEmpty) == 0 {
			if len(pages) > 0 {
				nonEmpty = pages[:1]
			} else {
				nonEmpty = []Page{{Name: newName(), Labels: labels, Decisions: []clusterv1beta1.ClusterDecision{}}}
			}
		}
		// Too fragmented: lay the group out afresh (reusing its page names).
		if need := (len(g.Clusters) + MaxDecisionsPerObject - 1) / MaxDecisionsPerObject; len(nonEmpty) > need+1 {
			fresh := Paginate(placement, []Group{g}, false)
			for i := range fresh {
				if i < len(nonEmpty) {
					fresh[i].Name = nonEmpty[i].Name
				} else {
					fresh[i].Name = newName()
				}
			}
			nonEmpty = fresh
		}
		for i := range nonEmpty {
			sort.Slice(nonEmpty[i].Decisions, func(a, b int) bool {
				return nonEmpty[i].Decisions[a].ClusterName < nonEmpty[i].Decisions[b].ClusterName
			})
		}
		out = append(out, nonEmpty...)
	}
	return out
}

// pageNumber parses N from "<placement>-decision-<N>".
func pageNumber(placement, name string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, placement+"-decision-"))
	return n, err == nil && strings.HasPrefix(name, placement+"-decision-")
}
