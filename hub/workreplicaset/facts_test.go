package workreplicaset

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"

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

func TestSummarize(t *testing.T) {
	ws := []*workv1.ManifestWork{
		work("h", 1, cond(workv1.WorkApplied, metav1.ConditionTrue, 1), cond(workv1.WorkAvailable, metav1.ConditionTrue, 1)),
		work("old", 1, cond(workv1.WorkApplied, metav1.ConditionTrue, 1), cond(workv1.WorkDegraded, metav1.ConditionTrue, 1)),
		work("h", 1, cond(workv1.WorkProgressing, metav1.ConditionTrue, 1)),
	}
	assert.Equal(t, workv1alpha1.ManifestWorkReplicaSetSummary{Total: 3, DesiredTotal: 5, Applied: 2, Available: 1, Degraded: 1, Progressing: 1, Updated: 2},
		Summarize(ws, "h", 5))
}

func TestConditions(t *testing.T) {
	get := func(cs []metav1.Condition, typ string) string {
		for _, c := range cs {
			if c.Type == typ {
				return string(c.Status) + "/" + c.Reason
			}
		}
		return ""
	}
	tests := []struct {
		name                      string
		outs                      []refOutcome
		verified, rolled, applied string
	}{
		{"complete", []refOutcome{{name: "p", found: true, decided: 2, plan: rollout.Plan{Complete: true}}},
			"True/AsExpected", "True/Complete", "True/AsExpected"},
		{"placement missing: works kept, rollout waits", []refOutcome{{name: "p", unknown: "not found in this namespace", kept: 2}},
			"False/PlacementDecisionNotFound", "False/Progressing", "True/AsExpected"},
		{"decisions in flux with none listed is not PlacementDecisionEmpty", []refOutcome{{name: "p", found: true, inFlux: true, plan: rollout.Plan{Complete: true}}},
			"True/AsExpected", "True/Complete", "True/AsExpected"},
		{"empty decisions", []refOutcome{{name: "p", found: true, plan: rollout.Plan{Complete: true}}},
			"False/PlacementDecisionEmpty", "True/Complete", "True/AsExpected"},
		{"progressing", []refOutcome{{name: "p", found: true, decided: 2, notYet: 1, plan: rollout.Plan{Reason: "1 of 2"}}},
			"True/AsExpected", "False/Progressing", "False/Processing"},
		{"failed", []refOutcome{{name: "p", found: true, decided: 2, failed: 1, notYet: 1, plan: rollout.Plan{Stopped: true, Reason: "stopped"}}},
			"True/AsExpected", "False/Progressing", "False/NotAsExpected"},
		{"no refs", nil, "False/PlacementDecisionNotFound", "True/Complete", "True/AsExpected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := conditions(3, tc.outs)
			assert.Equal(t, tc.verified, get(cs, workv1alpha1.ManifestWorkReplicaSetConditionPlacementVerified))
			assert.Equal(t, tc.rolled, get(cs, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut))
			assert.Equal(t, tc.applied, get(cs, workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied))
			for _, c := range cs {
				assert.NotEmpty(t, c.Message)
				assert.Equal(t, int64(3), c.ObservedGeneration)
			}
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
