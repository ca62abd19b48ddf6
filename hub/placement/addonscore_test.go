package placement_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

// setScore creates or updates the AddOnPlacementScore "load" in the cluster's namespace.
func (s *scope) setScore(cluster string, value int32) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		var sc clusterv1alpha1.AddOnPlacementScore
		err := hub.Get(s.ctx, client.ObjectKey{Namespace: cluster, Name: "load"}, &sc)
		if client.IgnoreNotFound(err) != nil {
			return false
		}
		if err != nil {
			sc = clusterv1alpha1.AddOnPlacementScore{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "load"}}
			if hub.Create(s.ctx, &sc) != nil {
				return false
			}
		}
		sc.Status.Scores = []clusterv1alpha1.AddOnPlacementScoreItem{{Name: "free", Value: value}}
		return hub.Status().Update(s.ctx, &sc) == nil
	}, timeout, tick)
}

func TestDecisionsFollowAddOnScores(t *testing.T) {
	s := newScope(t, "scores")
	for _, n := range []string{"scores-a", "scores-b"} {
		require.NoError(t, hub.Create(s.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}))
		s.cluster(n, nil)
	}
	s.setScore("scores-a", 10)
	s.setScore("scores-b", 90)
	s.placement(st.Placement("p", "").Exact().AddOnScore("load", "free", 1).Number(1).Obj())
	s.eventuallyDecided("p", "scores-b")

	s.setScore("scores-a", 100)
	s.setScore("scores-b", -50)
	s.eventuallyDecided("p", "scores-a")
}
