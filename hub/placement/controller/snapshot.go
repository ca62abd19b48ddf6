package controller

import (
	"context"
	"strings"
	"sync"
	"time"

	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub/placement/scheduling"
	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
)

// snapshot reads everything scheduling p needs from the caches (the fleet's
// part shared between passes, see fleet). Objects are listed without deep
// copies: the scheduler only reads them.
func (r *Reconciler) snapshot(ctx context.Context, p *clusterv1beta1.Placement, current []clusterv1beta1.PlacementDecision) (*scheduling.Snapshot, error) {
	clusters, sets, members, err := r.fleet.get(ctx, r.Client, r.infos)
	if err != nil {
		return nil, err
	}
	var bindings clusterv1beta2.ManagedClusterSetBindingList
	if err := r.List(ctx, &bindings, client.InNamespace(p.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	snap := &scheduling.Snapshot{Now: r.now(), Clusters: clusters, ClusterSets: sets, Members: members}
	for i := range bindings.Items {
		snap.Bindings = append(snap.Bindings, &bindings.Items[i])
	}
	for _, d := range current {
		for _, cd := range d.Status.Decisions {
			snap.Decided = append(snap.Decided, cd.ClusterName)
		}
	}
	if scheduling.NeedsDecisionCounts(p) {
		counts, err := r.counts.get(ctx, r.Client, r.now())
		if err != nil {
			return nil, err
		}
		own := map[string]bool{}
		for _, c := range snap.Decided {
			own[c] = true
		}
		snap.DecisionCounts = make(map[string]int, len(counts))
		for c, n := range counts {
			if own[c] && n > 0 {
				n-- // count OTHER placements only (counts may be a second old: never below 0)
			}
			snap.DecisionCounts[c] = n
		}
	}
	return snap, nil
}

// infoCache reuses ClusterInfos between passes while a cluster (and its addon
// scores) keep their resourceVersions: with thousands of placements, deriving
// claims and CEL values once per cluster change instead of once per pass matters.
type infoCache struct {
	mu      sync.Mutex
	entries map[string]infoEntry
}

type infoEntry struct {
	version string
	info    *framework.ClusterInfo
}

func newInfoCache() *infoCache { return &infoCache{entries: map[string]infoEntry{}} }

func (c *infoCache) get(clusters []clusterv1.ManagedCluster, scores []clusterv1alpha1.AddOnPlacementScore) []*framework.ClusterInfo {
	byNS := map[string][]*clusterv1alpha1.AddOnPlacementScore{}
	for i := range scores {
		byNS[scores[i].Namespace] = append(byNS[scores[i].Namespace], &scores[i])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*framework.ClusterInfo, 0, len(clusters))
	seen := make(map[string]bool, len(clusters))
	for i := range clusters {
		cl := &clusters[i]
		seen[cl.Name] = true
		var v strings.Builder
		v.WriteString(cl.ResourceVersion)
		for _, s := range byNS[cl.Name] {
			v.WriteString("|" + s.Name + "=" + s.ResourceVersion)
		}
		key := v.String()
		e, ok := c.entries[cl.Name]
		if !ok || e.version != key {
			// The entry outlives this pass: it holds its own copies, since a pointer
			// into clusters or scores would keep this pass's whole list alive (with
			// 1,000 clusters changing, hundreds of lists: most of the hub's heap).
			own := *cl
			var ownScores []*clusterv1alpha1.AddOnPlacementScore
			for _, sc := range byNS[cl.Name] {
				sc := *sc
				ownScores = append(ownScores, &sc)
			}
			e = infoEntry{version: key, info: framework.NewClusterInfo(&own, ownScores)}
			c.entries[cl.Name] = e
		}
		out = append(out, e.info)
	}
	if len(c.entries) > len(clusters) {
		for name := range c.entries {
			if !seen[name] {
				delete(c.entries, name)
			}
		}
	}
	return out
}

// countsTTL bounds how stale the fleet-wide decision counts used by Balance may be.
// Counting walks every PlacementDecision; doing that once per pass would make a
// burst of N placements cost N x (all decisions).
const countsTTL = time.Second

// countCache holds, per cluster, how many placements decide on it.
type countCache struct {
	mu     sync.Mutex
	at     time.Time
	counts map[string]int
}

func (c *countCache) get(ctx context.Context, r client.Reader, now time.Time) (map[string]int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts != nil && now.Sub(c.at) < countsTTL {
		return c.counts, nil
	}
	var all clusterv1beta1.PlacementDecisionList
	if err := r.List(ctx, &all, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, d := range all.Items {
		for _, cd := range d.Status.Decisions {
			counts[cd.ClusterName]++
		}
	}
	c.counts, c.at = counts, now
	return counts, nil
}
