package workreplicaset

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/hub/workreplicaset/rollout"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func work(hash string, gen int64, conds ...metav1.Condition) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Generation: gen, Annotations: map[string]string{
		TemplateHashAnnotation: hash, RolloutStartedAnnotation: t0.Format(time.RFC3339)}}}
	w.Status.Conditions = conds
	return w
}

func cond(t string, s metav1.ConditionStatus, gen int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(t0.Add(time.Minute))}
}

func TestWorkState(t *testing.T) {
	tests := []struct {
		name  string
		work  *workv1.ManifestWork
		state rollout.State
		since time.Time
	}{
		{"no work", nil, rollout.ToApply, time.Time{}},
		{"old revision", work("old", 1), rollout.ToApply, time.Time{}},
		{"just written", work("h", 1), rollout.Progressing, t0},
		{"applied, not yet available", work("h", 1, cond(workv1.WorkApplied, metav1.ConditionTrue, 1)), rollout.Progressing, t0},
		{"applied and available", work("h", 1, cond(workv1.WorkApplied, metav1.ConditionTrue, 1), cond(workv1.WorkAvailable, metav1.ConditionTrue, 1)),
			rollout.Succeeded, t0.Add(time.Minute)},
		{"conditions of an older generation do not count", work("h", 2, cond(workv1.WorkApplied, metav1.ConditionTrue, 1), cond(workv1.WorkAvailable, metav1.ConditionTrue, 1)),
			rollout.Progressing, t0},
		{"apply failed", work("h", 1, cond(workv1.WorkApplied, metav1.ConditionFalse, 1)), rollout.Failed, t0.Add(time.Minute)},
		{"degraded", work("h", 1, cond(workv1.WorkApplied, metav1.ConditionTrue, 1), cond(workv1.WorkDegraded, metav1.ConditionTrue, 1)), rollout.Failed, t0.Add(time.Minute)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, since := WorkState(tc.work, "h")
			assert.Equal(t, tc.state, s)
			assert.Equal(t, tc.since, since)
		})
	}
}

func TestTemplateHashIsStable(t *testing.T) {
	a := workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{}}}
	assert.Equal(t, TemplateHash(a), TemplateHash(*a.DeepCopy()))
	b := a.DeepCopy()
	b.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
	assert.NotEqual(t, TemplateHash(a), TemplateHash(*b))
}

func TestSplitDecisions(t *testing.T) {
	page := func(group int, name string, clusters ...string) clusterv1beta1.PlacementDecision {
		d := *testDecision("d"+strconv.Itoa(group), "p-uid", clusters...)
		d.Labels[clusterv1beta1.DecisionGroupIndexLabel] = strconv.Itoa(group)
		d.Labels[clusterv1beta1.DecisionGroupNameLabel] = name
		return d
	}
	all := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	tests := []struct {
		name     string
		own      []clusterv1beta1.PlacementDecision
		covered  map[string]bool
		accepted map[string]bool
		decided  []Decided
		held     []string
	}{
		{name: "accepted clusters roll out, in decision order, with their groups",
			own:      []clusterv1beta1.PlacementDecision{page(0, "canary", "b", "a"), page(1, "", "c")},
			accepted: all("a", "b", "c"),
			decided:  []Decided{{Name: "b", GroupName: "canary"}, {Name: "a", GroupName: "canary"}, {Name: "c", GroupIndex: 1}}},
		{name: "a pending join is held: no work written",
			own:      []clusterv1beta1.PlacementDecision{page(0, "", "a", "joining")},
			accepted: all("a"),
			decided:  []Decided{{Name: "a"}}, held: []string{"joining"}},
		{name: "a denied or vanished cluster is held too",
			own:      []clusterv1beta1.PlacementDecision{page(0, "", "denied", "gone")},
			accepted: map[string]bool{"denied": false},
			held:     []string{"denied", "gone"}},
		{name: "a cluster another ref covers is left to it",
			own:     []clusterv1beta1.PlacementDecision{page(0, "", "a", "b")},
			covered: all("a"), accepted: all("a", "b"),
			decided: []Decided{{Name: "b"}}},
		{name: "a cluster on two pages counts once",
			own:      []clusterv1beta1.PlacementDecision{page(0, "", "a"), page(1, "", "a", "joining"), page(2, "", "joining")},
			accepted: all("a"),
			decided:  []Decided{{Name: "a"}}, held: []string{"joining"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			covered := map[string]bool{}
			for c := range tc.covered {
				covered[c] = true
			}
			decided, held := SplitDecisions(tc.own, covered, tc.accepted)
			assert.Equal(t, tc.decided, decided)
			assert.Equal(t, tc.held, held)
			for _, d := range tc.own {
				for _, cd := range d.Status.Decisions {
					assert.True(t, covered[cd.ClusterName], "%s is covered: its work is kept", cd.ClusterName)
				}
			}
		})
	}
}
