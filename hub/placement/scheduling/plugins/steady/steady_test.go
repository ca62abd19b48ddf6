package steady

import (
	"testing"

	"github.com/stretchr/testify/assert"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

func TestSteady(t *testing.T) {
	p, _ := New(&framework.Handle{Decided: map[string]bool{"old": true}}, clusterv1beta1.ScoreCoordinate{})
	for name, want := range map[string]int64{"old": 100, "new": 0} {
		got, st := p.Score(framework.NewClusterInfo(st.Cluster(name).Obj(), nil))
		assert.Nil(t, st)
		assert.Equal(t, want, got, name)
	}
}
