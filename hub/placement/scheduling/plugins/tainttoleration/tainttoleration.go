// Package tainttoleration filters clusters by their taints and the Placement's
// tolerations.
//
//   - NoSelect: an untolerated taint removes the cluster, even from existing decisions.
//   - NoSelectIfNew: an untolerated taint keeps the cluster out unless it is already decided.
//   - PreferNoSelect: never filtered here; the scheduler ranks such clusters after all
//     others (see Prefer).
//
// A toleration with tolerationSeconds tolerates a NoSelect/PreferNoSelect taint until
// taint.timeAdded + tolerationSeconds; the filter asks to be re-run at that moment.
package tainttoleration

import (
	"time"

	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
)

// Name is the plugin's registry name.
const Name = "TaintToleration"

// Plugin is the taint filter for one Placement.
type Plugin struct {
	tolerations []clusterv1beta1.Toleration
	decided     map[string]bool
	now         time.Time
}

var _ framework.FilterPlugin = &Plugin{}

// New builds the filter from the Placement's tolerations.
func New(h *framework.Handle) (framework.FilterPlugin, error) {
	return &Plugin{tolerations: h.Placement.Spec.Tolerations, decided: h.Decided, now: h.Now}, nil
}

func (p *Plugin) Name() string { return Name }

func (p *Plugin) Filter(c *framework.ClusterInfo) *framework.Status {
	var requeue time.Duration
	for _, taint := range c.Cluster.Spec.Taints {
		if taint.Effect == clusterv1.TaintEffectPreferNoSelect {
			continue
		}
		if taint.Effect == clusterv1.TaintEffectNoSelectIfNew && p.decided[c.Name()] {
			continue
		}
		ok, remaining := Tolerated(p.tolerations, taint, p.now)
		if !ok {
			return framework.NewStatus(framework.Unschedulable, "taint %s=%s:%s is not tolerated", taint.Key, taint.Value, taint.Effect)
		}
		if remaining > 0 && (requeue == 0 || remaining < requeue) {
			requeue = remaining
		}
	}
	if requeue > 0 {
		return &framework.Status{Code: framework.Success, RequeueAfter: requeue}
	}
	return nil
}

// Prefer reports whether the cluster carries no untolerated PreferNoSelect taint.
func Prefer(tolerations []clusterv1beta1.Toleration, c *clusterv1.ManagedCluster, now time.Time) bool {
	for _, taint := range c.Spec.Taints {
		if taint.Effect != clusterv1.TaintEffectPreferNoSelect {
			continue
		}
		if ok, _ := Tolerated(tolerations, taint, now); !ok {
			return false
		}
	}
	return true
}

// Tolerated reports whether some toleration tolerates taint at now, and, when the
// best one expires, how long until it does (0 = forever).
func Tolerated(tolerations []clusterv1beta1.Toleration, taint clusterv1.Taint, now time.Time) (bool, time.Duration) {
	tolerated := false
	var longest time.Duration
	for _, t := range tolerations {
		if !matches(t, taint) {
			continue
		}
		if t.TolerationSeconds == nil || taint.Effect == clusterv1.TaintEffectNoSelectIfNew {
			return true, 0
		}
		expires := taint.TimeAdded.Add(time.Duration(*t.TolerationSeconds) * time.Second)
		if left := expires.Sub(now); left > 0 {
			tolerated = true
			if left > longest {
				longest = left
			}
		}
	}
	return tolerated, longest
}

func matches(t clusterv1beta1.Toleration, taint clusterv1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case clusterv1beta1.TolerationOpExists:
		return true
	case clusterv1beta1.TolerationOpEqual, "":
		return t.Key != "" && t.Value == taint.Value
	}
	return false
}
