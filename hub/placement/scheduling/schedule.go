package scheduling

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"flotilla.dev/flotilla/hub/clusterset/membership"
	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
	"flotilla.dev/flotilla/hub/placement/scheduling/plugins/balance"
	"flotilla.dev/flotilla/hub/placement/scheduling/plugins/tainttoleration"
)

// ReasonNotAccepted counts, in a NoManagedClusterMatched message, the eligible
// clusters the hub has not accepted (ocm.Accepted): they are never decided.
const ReasonNotAccepted = "not accepted by the hub (spec.hubAcceptsClient false, or HubAcceptedManagedCluster not True yet)"

// Schedule decides placement p on snap with the default plugins.
func Schedule(snap *Snapshot, p *clusterv1beta1.Placement) *Result {
	return DefaultRegistry().Schedule(snap, p)
}

// Schedule decides placement p on snap.
func (r *Registry) Schedule(snap *Snapshot, p *clusterv1beta1.Placement) *Result {
	res := &Result{}
	h := &framework.Handle{Placement: p, Now: snap.Now, Decided: toSet(snap.Decided), DecisionCounts: snap.DecisionCounts}

	// 1. Build the plugins. Anything wrong with the Placement surfaces here, before
	//    a single cluster is looked at.
	plan, err := r.build(h)
	if err != nil {
		res.Misconfigured = err
		return res
	}

	// 2. Eligible clusters: members of the bound sets the Placement asks for.
	eligible, reason, msg := eligible(snap, p)
	if reason != "" {
		res.Reason, res.Message = reason, msg
		res.Groups = []Group{{Index: 0}}
		return res
	}

	// 3. Filter: only clusters the hub accepted (never a pending join or a
	//    denied cluster, whatever its taints and the tolerations say); then
	//    some predicate (ORed) must pass entirely, and every filter.
	var feasible []*framework.ClusterInfo
	rejected := map[string]int{} // reason -> clusters, for the message
	for _, c := range eligible {
		if !c.Accepted() {
			rejected[ReasonNotAccepted]++
			continue
		}
		st := plan.filter(c)
		if st.IsSuccess() {
			if st != nil {
				res.requeue(st.RequeueAfter)
			}
			feasible = append(feasible, c)
			continue
		}
		rejected[st.Reason]++
	}
	if len(feasible) == 0 {
		res.Reason = ReasonNoManagedClusterMatched
		res.Message = fmt.Sprintf("No ManagedCluster among the %d eligible ones matches Placement %s/%s: %s",
			len(eligible), p.Namespace, p.Name, summarize(rejected))
		res.Groups = []Group{{Index: 0}}
		return res
	}

	// 4. Score and rank: untolerated PreferNoSelect last, then score, then name.
	ranked := rank(feasible, plan.score(feasible, res), p.Spec.Tolerations, snap.Now)
	feasible = feasible[:0]
	for _, r := range ranked {
		feasible = append(feasible, r.info)
	}

	// 5. Select.
	n := -1
	if p.Spec.NumberOfClusters != nil {
		n = int(*p.Spec.NumberOfClusters)
	}
	var chosen []*framework.ClusterInfo
	if plan.selector != nil {
		chosen = plan.selector.Select(feasible, n)
	} else if n >= 0 && n < len(feasible) {
		chosen = feasible[:n]
	} else {
		chosen = feasible
	}

	// 6. Order the output.
	score := scoreOf(ranked, chosen)
	for _, c := range chosen {
		res.Decisions = append(res.Decisions, Decision{ClusterName: c.Name(), Score: score(c)})
	}
	sortDecisions(res.Decisions, p.Spec.SortBy)

	// 7. Status facts.
	res.Satisfied, res.Reason, res.Message = satisfied(p, len(res.Decisions), len(feasible))

	// 8. Decision groups.
	res.Groups = plan.group(res.Decisions, feasibleByName(chosen))
	return res
}

// ranked is one feasible cluster with what orders it.
type ranked struct {
	info *framework.ClusterInfo
	// prefer is false for a cluster with an untolerated PreferNoSelect taint.
	prefer bool
	score  int64
}

// rank orders the feasible clusters (scores[i] is feasible[i]'s): clusters
// without an untolerated PreferNoSelect taint first, then by score, highest
// first, then by name. Cluster names are unique, so the order is total.
func rank(feasible []*framework.ClusterInfo, scores []int64, tolerations []clusterv1beta1.Toleration, now time.Time) []ranked {
	out := make([]ranked, len(feasible))
	for i, c := range feasible {
		out[i] = ranked{info: c, prefer: tainttoleration.Prefer(tolerations, c.Cluster, now), score: scores[i]}
	}
	slices.SortFunc(out, func(a, b ranked) int {
		switch {
		case a.prefer != b.prefer:
			if a.prefer {
				return -1
			}
			return 1
		case a.score != b.score:
			return cmp.Compare(b.score, a.score)
		}
		return strings.Compare(a.info.Name(), b.info.Name())
	})
	return out
}

// scoreOf returns the lookup of a chosen cluster's score. Without a spread
// selector the chosen clusters are the first ranked ones, in order.
func scoreOf(r []ranked, chosen []*framework.ClusterInfo) func(*framework.ClusterInfo) int64 {
	prefix := len(chosen) <= len(r)
	for i := 0; prefix && i < len(chosen); i++ {
		prefix = r[i].info == chosen[i]
	}
	if prefix {
		at := make(map[*framework.ClusterInfo]int64, len(chosen))
		for i := range chosen {
			at[r[i].info] = r[i].score
		}
		return func(c *framework.ClusterInfo) int64 { return at[c] }
	}
	at := make(map[*framework.ClusterInfo]int64, len(r))
	for _, x := range r {
		at[x.info] = x.score
	}
	return func(c *framework.ClusterInfo) int64 { return at[c] }
}

func satisfied(p *clusterv1beta1.Placement, selected, feasible int) (bool, string, string) {
	switch {
	case p.Spec.NumberOfClusters != nil && selected < int(*p.Spec.NumberOfClusters):
		return false, ReasonNotAllDecisionsScheduled, fmt.Sprintf("%d of %d requested ManagedClusters selected (%d match the Placement)",
			selected, *p.Spec.NumberOfClusters, feasible)
	case p.Spec.NumberOfClusters == nil && selected < feasible:
		return false, ReasonNotAllDecisionsScheduled, fmt.Sprintf("%d of %d matching ManagedClusters selected: the DoNotSchedule spread constraints hold the rest back",
			selected, feasible)
	}
	return true, ReasonAllDecisionsScheduled, fmt.Sprintf("All %d ManagedClusters selected", selected)
}

func sortDecisions(ds []Decision, by clusterv1beta1.PlacementSortByType) {
	sort.SliceStable(ds, func(i, j int) bool {
		if by == clusterv1beta1.PlacementSortByScore && ds[i].Score != ds[j].Score {
			return ds[i].Score > ds[j].Score
		}
		return ds[i].ClusterName < ds[j].ClusterName
	})
}

// eligible returns the members of the bound sets the Placement asks for, or a
// PlacementSatisfied reason and message when there are none.
func eligible(snap *Snapshot, p *clusterv1beta1.Placement) ([]*framework.ClusterInfo, string, string) {
	sets := map[string]int{}
	for i, s := range snap.ClusterSets {
		sets[s.Name] = i
	}
	var bound []string
	for _, b := range snap.Bindings {
		if _, ok := sets[b.Spec.ClusterSet]; ok && b.Namespace == p.Namespace && b.Name == b.Spec.ClusterSet && b.DeletionTimestamp == nil {
			bound = append(bound, b.Spec.ClusterSet)
		}
	}
	if len(bound) == 0 {
		return nil, ReasonNoManagedClusterSetBindings, fmt.Sprintf(
			"No ManagedClusterSet is bound to namespace %s: create a ManagedClusterSetBinding there (flotilla clusterset bind SET -n %s)",
			p.Namespace, p.Namespace)
	}
	if len(p.Spec.ClusterSets) > 0 {
		want := toSet(p.Spec.ClusterSets)
		var both []string
		for _, b := range bound {
			if want[b] {
				both = append(both, b)
			}
		}
		if len(both) == 0 {
			sort.Strings(bound)
			return nil, ReasonNoIntersection, fmt.Sprintf("None of the ManagedClusterSets %s named in spec.clusterSets is bound to namespace %s (bound: %s)",
				strings.Join(p.Spec.ClusterSets, ", "), p.Namespace, strings.Join(bound, ", "))
		}
		bound = both
	}
	sort.Strings(bound)
	var positions []int // of the members in snap.Clusters, ascending
	if len(bound) == 1 {
		positions = membersOf(snap, sets, bound[0])
	} else {
		member := make([]bool, len(snap.Clusters))
		for _, name := range bound {
			for _, i := range membersOf(snap, sets, name) {
				member[i] = true
			}
		}
		for i, m := range member {
			if m {
				positions = append(positions, i)
			}
		}
	}
	out := make([]*framework.ClusterInfo, 0, len(positions))
	for _, i := range positions {
		if c := snap.Clusters[i]; c.Cluster.DeletionTimestamp == nil {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, ReasonAllManagedClusterSetsEmpty, fmt.Sprintf("The ManagedClusterSets %s have no ManagedClusters", strings.Join(bound, ", "))
	}
	return out, "", ""
}

// membersOf returns the positions in snap.Clusters of the members of the set
// named name (sets: its position in snap.ClusterSets), from snap.Members when
// it holds the set.
func membersOf(snap *Snapshot, sets map[string]int, name string) []int {
	if m, ok := snap.Members[name]; ok {
		return m
	}
	return setMembers(snap.Clusters, snap.ClusterSets[sets[name]])
}

// SetMembers returns, per ManagedClusterSet name, the positions in clusters of
// the set's members, ascending (a set whose selector is broken has none: its
// own status says why). A controller that schedules many placements on the
// same clusters and sets computes it once for all of them (Snapshot.Members).
func SetMembers(clusters []*framework.ClusterInfo, sets []*clusterv1beta2.ManagedClusterSet) map[string][]int {
	out := make(map[string][]int, len(sets))
	for _, s := range sets {
		out[s.Name] = setMembers(clusters, s)
	}
	return out
}

func setMembers(clusters []*framework.ClusterInfo, set *clusterv1beta2.ManagedClusterSet) []int {
	sel, err := membership.Selector(set)
	if err != nil {
		return []int{}
	}
	out := []int{}
	for i, c := range clusters {
		if sel.Matches(labelsOf(c)) {
			out = append(out, i)
		}
	}
	return out
}

// NeedsDecisionCounts reports whether scheduling p reads Snapshot.DecisionCounts
// (the Balance prioritizer is active and scores matter), so the controller can skip
// the cost of counting when it does not.
func NeedsDecisionCounts(p *clusterv1beta1.Placement) bool {
	if !needsScores(p) {
		return false
	}
	w, err := weights(p)
	return err == nil && w[builtInKey(balance.Name)] != 0
}

func needsScores(p *clusterv1beta1.Placement) bool {
	return p.Spec.NumberOfClusters != nil || p.Spec.SortBy == clusterv1beta1.PlacementSortByScore ||
		len(p.Spec.SpreadPolicy.SpreadConstraints) > 0
}

func toSet(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func feasibleByName(cs []*framework.ClusterInfo) map[string]*framework.ClusterInfo {
	m := make(map[string]*framework.ClusterInfo, len(cs))
	for _, c := range cs {
		m[c.Name()] = c
	}
	return m
}

// summarize lists rejection reasons with their cluster counts, most common first,
// at most three.
func summarize(reasons map[string]int) string {
	keys := sortedKeys(reasons)
	sort.SliceStable(keys, func(i, j int) bool { return reasons[keys[i]] > reasons[keys[j]] })
	var parts []string
	for i, k := range keys {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more reasons", len(keys)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%d: %s", reasons[k], k))
	}
	return strings.Join(parts, "; ")
}
