package rules

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Aggregate combines the manifests' rule conditions into one work-level
// condition per type, as OCM does: Progressing is True when any manifest is
// progressing (else Unknown when any is unknown, else False); every other type
// (Complete, Degraded, custom ones) is False when any manifest's is False, True
// when all are True, and Unknown otherwise. The message is the manifest's
// when only one manifest has the type, else a count. Sorted by type.
func Aggregate(manifests []workv1.ManifestCondition, generation int64) []metav1.Condition {
	type count struct {
		t, f, u int
		message string
	}
	byType := map[string]*count{}
	for _, m := range manifests {
		for _, c := range m.Conditions {
			if !FromRule(c) {
				continue
			}
			n := byType[c.Type]
			if n == nil {
				n = &count{}
				byType[c.Type] = n
			}
			switch c.Status {
			case metav1.ConditionTrue:
				n.t++
			case metav1.ConditionFalse:
				n.f++
			default:
				n.u++
			}
			n.message = c.Message
		}
	}
	out := make([]metav1.Condition, 0, len(byType))
	for typ, n := range byType {
		c := metav1.Condition{Type: typ, Reason: ReasonAggregated, ObservedGeneration: generation}
		if typ == workv1.WorkProgressing {
			switch {
			case n.t > 0:
				c.Status = metav1.ConditionTrue
			case n.u > 0:
				c.Status = metav1.ConditionUnknown
			default:
				c.Status = metav1.ConditionFalse
			}
		} else {
			switch {
			case n.f > 0:
				c.Status = metav1.ConditionFalse
			case n.u > 0 || n.t == 0:
				c.Status = metav1.ConditionUnknown
			default:
				c.Status = metav1.ConditionTrue
			}
		}
		total := n.t + n.f + n.u
		if total == 1 && n.message != "" {
			c.Message = n.message
		} else {
			c.Message = fmt.Sprintf("Aggregated from %d manifest conditions: %d True, %d False, %d Unknown", total, n.t, n.f, n.u)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}
