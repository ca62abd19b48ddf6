package addonscore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func score(v int32, until *time.Time) *clusterv1alpha1.AddOnPlacementScore {
	s := &clusterv1alpha1.AddOnPlacementScore{ObjectMeta: metav1.ObjectMeta{Name: "res", Namespace: "c"}}
	s.Status.Scores = []clusterv1alpha1.AddOnPlacementScoreItem{{Name: "cpu", Value: v}, {Name: "other", Value: 7}}
	if until != nil {
		s.Status.ValidUntil = &metav1.Time{Time: *until}
	}
	return s
}

func TestAddOnScore(t *testing.T) {
	future, past := now.Add(time.Minute), now.Add(-time.Minute)
	tests := []struct {
		name    string
		scores  []*clusterv1alpha1.AddOnPlacementScore
		want    int64
		requeue time.Duration
	}{
		{"no score object", nil, 0, 0},
		{"valid forever", []*clusterv1alpha1.AddOnPlacementScore{score(42, nil)}, 42, 0},
		{"valid until later asks to requeue", []*clusterv1alpha1.AddOnPlacementScore{score(42, &future)}, 42, time.Minute},
		{"expired counts 0", []*clusterv1alpha1.AddOnPlacementScore{score(42, &past)}, 0, 0},
		{"clamped", []*clusterv1alpha1.AddOnPlacementScore{score(500, nil)}, 100, 0},
	}
	coord := clusterv1beta1.ScoreCoordinate{Type: "AddOn", AddOn: &clusterv1beta1.AddOnScore{ResourceName: "res", ScoreName: "cpu"}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(&framework.Handle{Now: now}, coord)
			require.NoError(t, err)
			got, st := p.Score(framework.NewClusterInfo(st.Cluster("c").Obj(), tc.scores))
			assert.Equal(t, tc.want, got)
			var requeue time.Duration
			if st != nil {
				requeue = st.RequeueAfter
			}
			assert.Equal(t, tc.requeue, requeue)
		})
	}
	_, err := New(&framework.Handle{}, clusterv1beta1.ScoreCoordinate{Type: "AddOn"})
	assert.ErrorContains(t, err, "addOn.resourceName")
}
