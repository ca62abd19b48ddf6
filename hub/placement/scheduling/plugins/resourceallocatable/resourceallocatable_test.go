package resourceallocatable

import (
	"testing"

	"github.com/stretchr/testify/assert"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

func TestResourceAllocatable(t *testing.T) {
	clusters := []*clusterv1.ManagedCluster{
		st.Cluster("small").Allocatable("2", "4Gi").Obj(),
		st.Cluster("mid").Allocatable("4", "64Gi").Obj(),
		st.Cluster("big").Allocatable("10", "8Gi").Obj(),
		st.Cluster("silent").Obj(),
	}
	tests := []struct {
		name string
		new  func() framework.ScorePlugin
		want map[string]int64
	}{
		{"cpu", func() framework.ScorePlugin { p, _ := NewCPU(nil, clusterAny); return p },
			map[string]int64{"silent": -100, "small": -60, "mid": -20, "big": 100}},
		{"memory", func() framework.ScorePlugin { p, _ := NewMemory(nil, clusterAny); return p },
			map[string]int64{"silent": -100, "small": -88, "big": -75, "mid": 100}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.new()
			scores := make([]int64, len(clusters))
			for i, c := range clusters {
				scores[i], _ = p.Score(framework.NewClusterInfo(c, nil))
			}
			p.NormalizeScore(scores)
			got := map[string]int64{}
			for i, c := range clusters {
				got[c.Name] = scores[i]
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

var clusterAny = clusterv1beta1.ScoreCoordinate{}

func TestAllEqualScoreMax(t *testing.T) {
	scores := []int64{5, 5}
	framework.ScaleLinear(scores)
	assert.Equal(t, []int64{100, 100}, scores)
}
