package scheduling

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

func TestScoreRateLimit(t *testing.T) {
	for in, want := range map[string]time.Duration{"": time.Minute, "30s": 30 * time.Second, "5m": 5 * time.Minute, "2h": 2 * time.Hour,
		"0s": 0, "x": time.Minute, "10d": time.Minute, "99999999999999999999h": time.Minute} {
		assert.Equal(t, want, ScoreRateLimit(&clusterv1beta1.Placement{Spec: clusterv1beta1.PlacementSpec{ScoreRateLimit: in}}), in)
	}
}

func TestHoldScores(t *testing.T) {
	page := func(group string, ds ...clusterv1beta1.ClusterDecision) Page {
		return Page{Name: "p-decision-1", Labels: map[string]string{clusterv1beta1.DecisionGroupIndexLabel: group, clusterv1beta1.DecisionGroupNameLabel: ""},
			Decisions: ds}
	}
	d := func(name string, score int64) clusterv1beta1.ClusterDecision {
		return clusterv1beta1.ClusterDecision{ClusterName: name, Score: score}
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	current := []Page{page("0", d("a", 90), d("b", 10))}
	rescored := []Page{page("0", d("b", 80), d("a", 20))}
	for _, tc := range []struct {
		name      string
		next      []Page
		lastWrite time.Time
		held      bool
		wait      time.Duration
	}{
		{"only scores changed, written 20s ago: held 40s", rescored, now.Add(-20 * time.Second), true, 40 * time.Second},
		{"only scores changed, limit passed", rescored, now.Add(-2 * time.Minute), false, 0},
		{"never written by this hub: written", rescored, time.Time{}, false, 0},
		{"a cluster joins: written at once", []Page{page("0", d("a", 90), d("b", 10), d("c", 0))}, now, false, 0},
		{"a cluster leaves: written at once", []Page{page("0", d("a", 90))}, now, false, 0},
		{"a cluster changes group: written at once", []Page{page("1", d("a", 90), d("b", 10))}, now, false, 0},
		{"nothing changed", current, now, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, wait := HoldScores(current, tc.next, tc.lastWrite, time.Minute, now)
			if tc.held {
				assert.Equal(t, current, got)
			} else {
				assert.Equal(t, tc.next, got)
			}
			assert.Equal(t, tc.wait, wait)
		})
	}
}
