package placement_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
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

// scores returns each decided cluster's recorded score.
func (s *scope) scores(placement string) map[string]int64 {
	var list clusterv1beta1.PlacementDecisionList
	if err := hub.List(s.ctx, &list, client.InNamespace(s.ns), client.MatchingLabels{clusterv1beta1.PlacementLabel: placement}); err != nil {
		return nil
	}
	out := map[string]int64{}
	for _, d := range list.Items {
		for _, cd := range d.Status.Decisions {
			out[cd.ClusterName] = cd.Score
		}
	}
	return out
}

// TestScoreRateLimit: with sortBy Score, new scores alone reach the decisions
// at most every scoreRateLimit; a change of the selected clusters is written
// at once, with the current scores.
func TestScoreRateLimit(t *testing.T) {
	s := newScope(t, "ratelimit")
	for _, n := range []string{"ratelimit-a", "ratelimit-b", "ratelimit-c"} {
		require.NoError(t, hub.Create(s.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}))
	}
	s.cluster("ratelimit-a", nil)
	s.cluster("ratelimit-b", nil)
	s.setScore("ratelimit-a", 10)
	s.setScore("ratelimit-b", 90)
	slow := st.Placement("slow", "").Exact().AddOnScore("load", "free", 1).SortByScore().Obj()
	slow.Spec.ScoreRateLimit = "1h"
	fast := st.Placement("fast", "").Exact().AddOnScore("load", "free", 1).SortByScore().Obj()
	fast.Spec.ScoreRateLimit = "1s"
	s.placement(slow)
	s.placement(fast)
	for _, p := range []string{"slow", "fast"} {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Equal(c, map[string]int64{"ratelimit-a": 10, "ratelimit-b": 90}, s.scores(p))
		}, timeout, tick, p)
	}

	s.setScore("ratelimit-a", 70)
	s.setScore("ratelimit-b", 20)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, map[string]int64{"ratelimit-a": 70, "ratelimit-b": 20}, s.scores("fast"))
	}, timeout, tick, "new scores written once the 1s limit passed")

	s.setScore("ratelimit-c", 50)
	s.cluster("ratelimit-c", nil)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, map[string]int64{"ratelimit-a": 70, "ratelimit-b": 20, "ratelimit-c": 50}, s.scores("slow"))
	}, timeout, tick, "a new cluster is written at once, with the current scores, despite the 1h limit")
}

// TestExpiredAddOnScoreCountsZero: as in OCM, a score past status.validUntil
// counts as 0; the scheduler re-runs by itself when it expires.
func TestExpiredAddOnScoreCountsZero(t *testing.T) {
	s := newScope(t, "expiry")
	for _, n := range []string{"expiry-a", "expiry-b"} {
		require.NoError(t, hub.Create(s.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}))
		s.cluster(n, nil)
	}
	s.setScore("expiry-b", 50)
	s.setScore("expiry-a", 90)
	require.Eventually(t, func() bool {
		var sc clusterv1alpha1.AddOnPlacementScore
		if hub.Get(s.ctx, client.ObjectKey{Namespace: "expiry-a", Name: "load"}, &sc) != nil {
			return false
		}
		sc.Status.ValidUntil = &metav1.Time{Time: time.Now().Add(8 * time.Second)}
		return hub.Status().Update(s.ctx, &sc) == nil
	}, timeout, tick)
	s.placement(st.Placement("p", "").Exact().AddOnScore("load", "free", 1).Number(1).Obj())
	s.eventuallyDecided("p", "expiry-a")
	s.eventuallyDecided("p", "expiry-b") // a's 90 expired: 0 < 50
}
