package balance

import (
	"testing"

	"github.com/stretchr/testify/assert"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

func TestBalance(t *testing.T) {
	t.Run("NormalizeScore clamps raw scores it did not produce", func(t *testing.T) {
		p, _ := New(&framework.Handle{}, clusterv1beta1.ScoreCoordinate{})
		got := []int64{-5, 10, 0}
		p.NormalizeScore(got)
		assert.Equal(t, []int64{100, -100, 100}, got)
	})
	tests := []struct {
		name   string
		counts map[string]int
		want   map[string]int64
	}{
		{"nobody used", nil, map[string]int64{"a": 100, "b": 100, "c": 100}},
		{"busiest -100, idle 100", map[string]int{"a": 4, "b": 2}, map[string]int64{"a": -100, "b": 0, "c": 100}},
		// A fleet count older than this placement's own decisions can go below 0
		// once its own decision is subtracted: still 100 at most.
		{"negative count clamps to 100", map[string]int{"a": -1, "b": 2}, map[string]int64{"a": 100, "b": -100, "c": 100}},
		{"only negative counts", map[string]int{"a": -3}, map[string]int64{"a": 100, "b": 100, "c": 100}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := New(&framework.Handle{DecisionCounts: tc.counts}, clusterv1beta1.ScoreCoordinate{})
			names := []string{"a", "b", "c"}
			scores := make([]int64, len(names))
			for i, n := range names {
				scores[i], _ = p.Score(framework.NewClusterInfo(st.Cluster(n).Obj(), nil))
			}
			p.NormalizeScore(scores)
			got := map[string]int64{}
			for i, n := range names {
				got[n] = scores[i]
			}
			assert.Equal(t, tc.want, got)
			for n, v := range got {
				assert.True(t, v >= framework.MinScore && v <= framework.MaxScore, "%s: %d out of [-100,100]", n, v)
			}
		})
	}
}
