// Package spread implements spreadPolicy.spreadConstraints, which upstream OCM
// accepts but does not schedule by.
//
// Each constraint names a topology (a label or a claim). The skew of placing one
// more cluster in domain d is count[d]+1 - min(count over all domains), where the
// domains are the values the feasible clusters carry. With DoNotSchedule a cluster is
// only selected when the skew stays within maxSkew for that constraint (clusters
// without the key are never selected); with ScheduleAnyway a cluster that would exceed
// maxSkew is selected only when no better-spread cluster is left. Constraints weigh
// in their order; within the same spread, the scheduler's ranking decides.
package spread

import (
	"fmt"

	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
)

// Name is the plugin's registry name.
const Name = "Spread"

type term struct {
	key     string
	claim   bool
	maxSkew int
	hard    bool
}

// Plugin is the selection stage for a Placement with spread constraints.
type Plugin struct{ terms []term }

var _ framework.SelectPlugin = &Plugin{}

// New returns nil when the Placement has no spread constraints.
func New(h *framework.Handle) (framework.SelectPlugin, error) {
	cs := h.Placement.Spec.SpreadPolicy.SpreadConstraints
	if len(cs) == 0 {
		return nil, nil
	}
	p := &Plugin{}
	for i, c := range cs {
		t := term{key: c.TopologyKey, maxSkew: int(c.MaxSkew)}
		if t.key == "" {
			return nil, fmt.Errorf("spreadPolicy.spreadConstraints[%d].topologyKey is empty", i)
		}
		switch c.TopologyKeyType {
		case clusterv1beta1.TopologyKeyTypeLabel, "":
		case clusterv1beta1.TopologyKeyTypeClaim:
			t.claim = true
		default:
			return nil, fmt.Errorf("spreadPolicy.spreadConstraints[%d].topologyKeyType %q is not Label or Claim", i, c.TopologyKeyType)
		}
		if t.maxSkew == 0 {
			t.maxSkew = 1
		}
		if t.maxSkew < 0 {
			return nil, fmt.Errorf("spreadPolicy.spreadConstraints[%d].maxSkew %d must be at least 1", i, c.MaxSkew)
		}
		switch c.WhenUnsatisfiable {
		case clusterv1beta1.ScheduleAnyway, "":
		case clusterv1beta1.DoNotSchedule:
			t.hard = true
		default:
			return nil, fmt.Errorf("spreadPolicy.spreadConstraints[%d].whenUnsatisfiable %q is not DoNotSchedule or ScheduleAnyway", i, c.WhenUnsatisfiable)
		}
		p.terms = append(p.terms, t)
	}
	return p, nil
}

func (p *Plugin) Name() string { return Name }

func (t term) domain(c *framework.ClusterInfo) (string, bool) {
	if t.claim {
		v, ok := c.Claims[t.key]
		return v, ok
	}
	v, ok := c.Cluster.Labels[t.key]
	return v, ok
}

// noDomain is the penalty for a cluster without the topology key under ScheduleAnyway:
// it is taken only after every cluster that has the key.
const noDomain = 1 << 30

// Select picks clusters one at a time: the first ranked cluster that keeps every
// DoNotSchedule constraint within maxSkew and has the smallest ScheduleAnyway overshoot.
func (p *Plugin) Select(ranked []*framework.ClusterInfo, n int) []*framework.ClusterInfo {
	if n < 0 || n > len(ranked) {
		n = len(ranked)
	}
	counts := make([]map[string]int, len(p.terms))
	for i, t := range p.terms {
		counts[i] = map[string]int{}
		for _, c := range ranked {
			if d, ok := t.domain(c); ok {
				counts[i][d] = 0
			}
		}
	}
	taken := make([]bool, len(ranked))
	var selected []*framework.ClusterInfo
	penalty := make([]int, len(p.terms))
	best := make([]int, len(p.terms))
	for len(selected) < n {
		bestIdx := -1
		for idx, c := range ranked {
			if taken[idx] || !p.penalties(c, counts, penalty) {
				continue
			}
			if bestIdx < 0 || less(penalty, best) {
				bestIdx = idx
				copy(best, penalty)
				if allZero(best) {
					break
				}
			}
		}
		if bestIdx < 0 {
			break
		}
		taken[bestIdx] = true
		selected = append(selected, ranked[bestIdx])
		for i, t := range p.terms {
			if d, ok := t.domain(ranked[bestIdx]); ok {
				counts[i][d]++
			}
		}
	}
	return selected
}

// penalties fills out with the overshoot per constraint and reports whether the
// cluster is allowed at all (hard constraints).
func (p *Plugin) penalties(c *framework.ClusterInfo, counts []map[string]int, out []int) bool {
	for i, t := range p.terms {
		d, ok := t.domain(c)
		if !ok {
			if t.hard {
				return false
			}
			out[i] = noDomain
			continue
		}
		lowest := -1
		for _, v := range counts[i] {
			if lowest < 0 || v < lowest {
				lowest = v
			}
		}
		over := counts[i][d] + 1 - lowest - t.maxSkew
		if over > 0 && t.hard {
			return false
		}
		out[i] = max(over, 0)
	}
	return true
}

func less(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func allZero(a []int) bool {
	for _, v := range a {
		if v != 0 {
			return false
		}
	}
	return true
}
