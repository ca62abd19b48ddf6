package scheduling

import (
	"reflect"
	"strconv"
	"time"

	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// DefaultScoreRateLimit is spec.scoreRateLimit's default (the CRD's).
const DefaultScoreRateLimit = time.Minute

// ScoreRateLimit reads spec.scoreRateLimit: digits followed by h, m or s (the
// CRD's pattern). Empty or unreadable (the schema refuses it) is the default.
func ScoreRateLimit(p *clusterv1beta1.Placement) time.Duration {
	s := p.Spec.ScoreRateLimit
	if len(s) < 2 {
		return DefaultScoreRateLimit
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil || n < 0 {
		return DefaultScoreRateLimit
	}
	unit := map[byte]time.Duration{'h': time.Hour, 'm': time.Minute, 's': time.Second}[s[len(s)-1]]
	if unit == 0 || n > int64(1<<62)/int64(unit) {
		return DefaultScoreRateLimit
	}
	return time.Duration(n) * unit
}

// SameSelection says two sets of pages decide the same clusters in the same
// decision groups, whatever their scores and order.
func SameSelection(a, b []Page) bool {
	return reflect.DeepEqual(selection(a), selection(b))
}

func selection(pages []Page) map[string]string {
	out := map[string]string{}
	for _, p := range pages {
		g := p.Labels[clusterv1beta1.DecisionGroupIndexLabel] + "/" + p.Labels[clusterv1beta1.DecisionGroupNameLabel]
		for _, d := range p.Decisions {
			out[d.ClusterName] = g
		}
	}
	return out
}

// HoldScores applies spec.scoreRateLimit, as the API describes it: when the
// next pages differ from the current ones only in recorded scores (and the
// order they bring), they are not written more often than limit. It returns
// the pages to write (current while held) and, while held, how long until the
// new scores may be written. lastWrite is when this placement's scores were
// last written (zero: never, so nothing is held).
func HoldScores(current, next []Page, lastWrite time.Time, limit time.Duration, now time.Time) ([]Page, time.Duration) {
	if lastWrite.IsZero() || len(current) == 0 || SamePages(current, next) || !SameSelection(current, next) {
		return next, 0
	}
	if wait := lastWrite.Add(limit).Sub(now); wait > 0 {
		return current, wait
	}
	return next, 0
}

// SamePages says two sets of pages would write the same PlacementDecisions
// (an empty list and none are the same).
func SamePages(a, b []Page) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || len(a[i].Decisions) != len(b[i].Decisions) || !reflect.DeepEqual(nonNil(a[i].Labels), nonNil(b[i].Labels)) {
			return false
		}
		for j := range a[i].Decisions {
			if a[i].Decisions[j] != b[i].Decisions[j] {
				return false
			}
		}
	}
	return true
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
