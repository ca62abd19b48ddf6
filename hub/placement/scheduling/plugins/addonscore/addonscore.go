// Package addonscore is the AddOn prioritizer: it reads a score an addon publishes in
// an AddOnPlacementScore in the cluster's namespace. Missing or expired
// (status.validUntil in the past) scores count as 0; values are clamped to [-100,100].
package addonscore

import (
	"errors"
	"time"

	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
)

// Name is the plugin's registry name (scoreCoordinate.type AddOn).
const Name = "AddOn"

// Plugin reads one addon score.
type Plugin struct {
	key string
	now time.Time
}

var _ framework.ScorePlugin = &Plugin{}

// New builds the prioritizer; the coordinate must name a resource and a score.
func New(h *framework.Handle, coord clusterv1beta1.ScoreCoordinate) (framework.ScorePlugin, error) {
	if coord.AddOn == nil || coord.AddOn.ResourceName == "" || coord.AddOn.ScoreName == "" {
		return nil, errors.New("scoreCoordinate of type AddOn needs addOn.resourceName and addOn.scoreName")
	}
	return &Plugin{key: coord.AddOn.ResourceName + "/" + coord.AddOn.ScoreName, now: h.Now}, nil
}

func (p *Plugin) Name() string { return Name + "/" + p.key }

// Score returns the addon's value; a still-valid score asks for a re-run when it expires.
func (p *Plugin) Score(c *framework.ClusterInfo) (int64, *framework.Status) {
	s, ok := c.Scores[p.key]
	if !ok {
		return 0, nil
	}
	if !s.ValidUntil.IsZero() {
		if !s.ValidUntil.After(p.now) {
			return 0, nil
		}
		return clamp(int64(s.Value)), &framework.Status{RequeueAfter: s.ValidUntil.Sub(p.now)}
	}
	return clamp(int64(s.Value)), nil
}

// NormalizeScore leaves the scores: addons already publish them in range.
func (p *Plugin) NormalizeScore([]int64) *framework.Status { return nil }

func clamp(v int64) int64 { return min(max(v, framework.MinScore), framework.MaxScore) }
