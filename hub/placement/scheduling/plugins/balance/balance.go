// Package balance is the Balance prioritizer: clusters that fewer other placements
// have decided on score higher, spreading load across the fleet.
package balance

import (
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
)

// Name is the built-in prioritizer name.
const Name = "Balance"

// Plugin scores 100 for a cluster no other placement uses and -100 for the most used.
type Plugin struct{ counts map[string]int }

var _ framework.ScorePlugin = &Plugin{}

// New builds the prioritizer from the handle's decision counts.
func New(h *framework.Handle, _ clusterv1beta1.ScoreCoordinate) (framework.ScorePlugin, error) {
	return &Plugin{counts: h.DecisionCounts}, nil
}

func (p *Plugin) Name() string { return Name }

// Score returns how many other placements decide on the cluster (never below 0:
// the fleet-wide counts may be up to a second older than this placement's own
// decisions, which are subtracted from them).
func (p *Plugin) Score(c *framework.ClusterInfo) (int64, *framework.Status) {
	return max(int64(p.counts[c.Name()]), 0), nil
}

// NormalizeScore maps 0 decisions to 100 and the busiest cluster to -100; every
// result stays within [MinScore, MaxScore] whatever the raw scores.
func (p *Plugin) NormalizeScore(scores []int64) *framework.Status {
	var highest int64
	for _, v := range scores {
		highest = max(highest, v)
	}
	for k, v := range scores {
		if highest == 0 {
			scores[k] = framework.MaxScore
			continue
		}
		v = min(max(v, 0), highest)
		scores[k] = framework.MaxScore - v*(framework.MaxScore-framework.MinScore)/highest
	}
	return nil
}
