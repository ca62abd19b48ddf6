package framework

import (
	"fmt"
	"sync"
	"time"

	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/internal/ocm"
)

// Code separates "this cluster does not fit" from "the configuration is broken".
type Code int

const (
	// Success: the cluster passes.
	Success Code = iota
	// Unschedulable: the cluster does not fit; Reason says why.
	Unschedulable
	// Misconfigured: the Placement cannot be evaluated as written (bad selector,
	// CEL that does not compile, unknown prioritizer). Reported on the Placement's
	// PlacementMisconfigured condition.
	Misconfigured
)

// Status is a plugin's verdict. A nil *Status means Success.
type Status struct {
	Code   Code
	Reason string
	// RequeueAfter asks for another scheduling pass after this long even though
	// nothing else changes (a toleration that expires, an addon score that goes stale).
	RequeueAfter time.Duration
}

// NewStatus builds a Status with a formatted reason.
func NewStatus(code Code, format string, args ...any) *Status {
	return &Status{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// IsSuccess reports whether s is nil or Success.
func (s *Status) IsSuccess() bool { return s == nil || s.Code == Success }

// ClusterInfo is one ManagedCluster as plugins see it, with derived lookups computed
// once per snapshot.
type ClusterInfo struct {
	Cluster *clusterv1.ManagedCluster
	// Claims maps status.clusterClaims names to values.
	Claims map[string]string
	// Scores maps "<AddOnPlacementScore name>/<score name>" to the score, for
	// AddOnPlacementScores in the cluster's namespace.
	Scores map[string]AddOnScore

	celOnce  sync.Once
	celValue map[string]any

	acceptedOnce sync.Once
	accepted     bool
}

// AddOnScore is one addon-provided score and when it stops being valid.
type AddOnScore struct {
	Value int32
	// ValidUntil is zero when the score never expires.
	ValidUntil time.Time
}

// Name is the cluster's name.
func (c *ClusterInfo) Name() string { return c.Cluster.Name }

// CELValue returns (and caches) the cluster as an unstructured map for CEL. Safe for
// concurrent use: one ClusterInfo may be shared by concurrent scheduling passes.
func (c *ClusterInfo) CELValue(convert func(*clusterv1.ManagedCluster) map[string]any) map[string]any {
	c.celOnce.Do(func() { c.celValue = convert(c.Cluster) })
	return c.celValue
}

// Accepted reports (and caches) ocm.Accepted for the cluster: the hub accepts it.
// Safe for concurrent use, like CELValue.
func (c *ClusterInfo) Accepted() bool {
	c.acceptedOnce.Do(func() { c.accepted = ocm.Accepted(c.Cluster) })
	return c.accepted
}

// NewClusterInfo derives the lookups for cluster from its status and the
// AddOnPlacementScores in its namespace.
func NewClusterInfo(cluster *clusterv1.ManagedCluster, scores []*clusterv1alpha1.AddOnPlacementScore) *ClusterInfo {
	ci := &ClusterInfo{Cluster: cluster, Claims: map[string]string{}}
	for _, claim := range cluster.Status.ClusterClaims {
		ci.Claims[claim.Name] = claim.Value
	}
	for _, s := range scores {
		if len(s.Status.Scores) == 0 {
			continue
		}
		if ci.Scores == nil {
			ci.Scores = map[string]AddOnScore{}
		}
		var until time.Time
		if s.Status.ValidUntil != nil {
			until = s.Status.ValidUntil.Time
		}
		for _, item := range s.Status.Scores {
			ci.Scores[s.Name+"/"+item.Name] = AddOnScore{Value: item.Value, ValidUntil: until}
		}
	}
	return ci
}

// Handle is what plugins get when they are built for one scheduling pass.
type Handle struct {
	Placement *clusterv1beta1.Placement
	// Now is the scheduling instant (injected so that tests are deterministic).
	Now time.Time
	// Decided holds the clusters in the Placement's current decisions.
	Decided map[string]bool
	// DecisionCounts holds, per cluster, how many OTHER placements currently
	// decide on it (used by Balance). Nil when not needed.
	DecisionCounts map[string]int
}

// FilterPlugin rejects clusters that must not be selected.
type FilterPlugin interface {
	Name() string
	Filter(c *ClusterInfo) *Status
}

// ScorePlugin ranks feasible clusters. Score returns a raw score; NormalizeScore then
// maps all raw scores (one per feasible cluster, in the order they were scored) into
// [MinScore, MaxScore] in place. A normalisation looks at the values only: which
// cluster holds which value does not change it.
type ScorePlugin interface {
	Name() string
	Score(c *ClusterInfo) (int64, *Status)
	NormalizeScore(scores []int64) *Status
}

// Score bounds every prioritizer's normalised score lies in.
const (
	MinScore int64 = -100
	MaxScore int64 = 100
)

// SelectorFactory builds a filter for one predicate's ClusterSelector. Predicates
// are ORed; the selectors built for one predicate are ANDed.
type SelectorFactory func(sel clusterv1beta1.ClusterSelector) (FilterPlugin, error)

// FilterFactory builds a placement-wide filter.
type FilterFactory func(h *Handle) (FilterPlugin, error)

// ScoreFactory builds a prioritizer for one score coordinate.
type ScoreFactory func(h *Handle, coord clusterv1beta1.ScoreCoordinate) (ScorePlugin, error)

// ScaleLinear maps scores from [min,max] onto [MinScore,MaxScore]; when all scores
// are equal they all get MaxScore. Shared by prioritizers that rank by a quantity.
func ScaleLinear(scores []int64) {
	if len(scores) == 0 {
		return
	}
	first := true
	var lo, hi int64
	for _, v := range scores {
		if first || v < lo {
			lo = v
		}
		if first || v > hi {
			hi = v
		}
		first = false
	}
	for k, v := range scores {
		if hi == lo {
			scores[k] = MaxScore
			continue
		}
		scores[k] = MinScore + (v-lo)*(MaxScore-MinScore)/(hi-lo)
	}
}

// SelectPlugin picks the final clusters from the ranked feasible ones (best first).
// n < 0 means "as many as are allowed". Without a SelectPlugin the scheduler takes
// the first n.
type SelectPlugin interface {
	Name() string
	Select(ranked []*ClusterInfo, n int) []*ClusterInfo
}

// SelectFactory builds the selection-stage plugin from the Placement; it returns
// (nil, nil) when the Placement does not need one.
type SelectFactory func(h *Handle) (SelectPlugin, error)
