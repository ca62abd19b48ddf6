// Package steady is the Steady prioritizer: clusters already in the Placement's
// decisions score 100, others 0, so decisions do not churn.
package steady

import (
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
)

// Name is the built-in prioritizer name.
const Name = "Steady"

// Plugin favours the current decisions.
type Plugin struct{ decided map[string]bool }

var _ framework.ScorePlugin = &Plugin{}

// New builds the prioritizer from the handle's current decisions.
func New(h *framework.Handle, _ clusterv1beta1.ScoreCoordinate) (framework.ScorePlugin, error) {
	return &Plugin{decided: h.Decided}, nil
}

func (p *Plugin) Name() string { return Name }

func (p *Plugin) Score(c *framework.ClusterInfo) (int64, *framework.Status) {
	if p.decided[c.Name()] {
		return framework.MaxScore, nil
	}
	return 0, nil
}

// NormalizeScore leaves the scores as they are: they are already in range.
func (p *Plugin) NormalizeScore([]int64) *framework.Status { return nil }
