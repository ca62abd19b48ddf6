package scheduling

import (
	"reflect"

	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// PageWrites orders the writes that turn the previous pages into next so that a
// cluster decided before and after is listed on some page after every single
// write: consumers (a ManifestWorkReplicaSet, an addon) that read the decisions
// between two writes never see it vanish and never remove its workload.
//
// Pages are written one object at a time, so a cluster that moves from page A to
// page B (scores reorder a sorted placement, a cluster changes decision group, a
// fragmented group is laid out afresh) would be missing if A were written first;
// two clusters swapping pages defeat any plain ordering. So the writes come in two
// rounds:
//
//  1. every page that gains a cluster is written with its new decisions plus the
//     clusters it is losing to another page (they stay until their new page lists
//     them); clusters that leave the placement are dropped here already;
//  2. pages that still list such movers are written with their final decisions.
//
// Pages of previous that next does not have are deleted last (deletes), when
// their clusters are listed elsewhere. A cluster is briefly listed twice when it
// moves, never zero times. The usual change, one cluster joining or leaving, is
// one write.
func PageWrites(previous, next []Page) (writes []Page, deletes []string) {
	decided := map[string]bool{}
	for _, pg := range next {
		for _, d := range pg.Decisions {
			decided[d.ClusterName] = true
		}
	}
	prev := map[string]Page{}
	for _, pg := range previous {
		prev[pg.Name] = pg
	}
	// Round 1: gains in, departures out, movers kept.
	written := map[string][]clusterv1beta1.ClusterDecision{}
	for _, pg := range next {
		old, existed := prev[pg.Name]
		staged := append([]clusterv1beta1.ClusterDecision{}, pg.Decisions...)
		listed := map[string]bool{}
		for _, d := range pg.Decisions {
			listed[d.ClusterName] = true
		}
		for _, d := range old.Decisions {
			if decided[d.ClusterName] && !listed[d.ClusterName] {
				staged = append(staged, d) // moving to another page: stays until that page is written
				listed[d.ClusterName] = true
			}
		}
		written[pg.Name] = old.Decisions
		if !existed || !sameDecisions(staged, old.Decisions) || !hasLabels(old.Labels, pg.Labels) {
			writes = append(writes, Page{Name: pg.Name, Labels: pg.Labels, Decisions: staged})
			written[pg.Name] = staged
		}
	}
	// Round 2: drop the movers, now listed on their new pages.
	for _, pg := range next {
		if !sameDecisions(written[pg.Name], pg.Decisions) {
			writes = append(writes, pg)
		}
	}
	for _, pg := range previous {
		if _, kept := written[pg.Name]; !kept {
			deletes = append(deletes, pg.Name)
		}
	}
	return writes, deletes
}

// sameDecisions compares decision lists, nil and empty alike.
func sameDecisions(a, b []clusterv1beta1.ClusterDecision) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// hasLabels: have carries every label of want (other labels may be there too).
func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}
