package workreplicaset

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"

	"flotilla.dev/flotilla/hub/workreplicaset/rollout"
	"flotilla.dev/flotilla/internal/placementread"
)

// placed is a placement's answer listing clusters, with readiness r.
func placed(r placementread.Readiness, clusters ...string) placementread.Decisions {
	own := []clusterv1beta1.PlacementDecision{*testDecision("d", "p-uid", clusters...)}
	return placementread.Decisions{Found: true, Readiness: r, Own: own, Clusters: placementread.Clusters(own)}
}

// refTo is a placementRef named name with what was read for it; every
// cluster d lists is accepted.
func refTo(name string, d placementread.Decisions) RefFacts {
	rf := RefFacts{Ref: workv1alpha1.LocalPlacementReference{Name: name}, Decisions: d, Accepted: map[string]bool{}}
	for _, c := range d.Clusters {
		rf.Accepted[c.Name] = true
	}
	return rf
}

// owned is the replica set's work on cluster, written for placement with revision hash.
func owned(cluster, placement, hash string, conds ...metav1.Condition) *workv1.ManifestWork {
	w := work(hash, 1, conds...)
	w.Name, w.Namespace = "app", cluster
	w.Labels = map[string]string{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: ns + ".app",
		workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey: placement}
	return w
}

// brief is one line of a ref's outcome, for the table below.
func brief(o refOutcome) string {
	var b strings.Builder
	b.WriteString(o.name + ":")
	if o.unknown != "" {
		fmt.Fprintf(&b, " unknown(%s)", o.unknown)
	}
	if o.inFlux {
		b.WriteString(" inFlux")
	}
	if o.planErr != nil {
		b.WriteString(" planErr")
	}
	fmt.Fprintf(&b, " decided=%d failed=%d notYet=%d kept=%d", o.decided, o.failed, o.notYet, o.kept)
	if len(o.held) > 0 {
		fmt.Fprintf(&b, " held=%v", o.held)
	}
	return b.String()
}

func clustersOf(ws []*workv1.ManifestWork) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Namespace)
	}
	return out
}

// TestPlan covers every decision of a reconcile on its facts alone.
func TestPlan(t *testing.T) {
	const h = "h"
	now := t0.Add(time.Hour)
	errBoom := errors.New("etcdserver: request timed out")
	ok := []metav1.Condition{cond(workv1.WorkApplied, metav1.ConditionTrue, 1), cond(workv1.WorkAvailable, metav1.ConditionTrue, 1)}
	broken := cond(workv1.WorkApplied, metav1.ConditionFalse, 1)
	with := func(rf RefFacts, edit func(*RefFacts)) RefFacts { edit(&rf); return rf }
	strategy := func(s clusterv1alpha1.RolloutStrategy) func(*RefFacts) {
		return func(rf *RefFacts) { rf.Ref.RolloutStrategy = s }
	}
	gone := owned("c3", "all", h, ok...)
	gone.DeletionTimestamp = &metav1.Time{Time: t0}
	notScheduled := placed(placementread.Unknown, "c1")
	notScheduled.Reason = "has not published decisions for its current spec yet"

	tests := []struct {
		name      string
		refs      []RefFacts
		works     []*workv1.ManifestWork
		apply     []string // "create|update <cluster> (<placement>)"
		del, keep []string
		requeue   time.Duration
		outcomes  []string // brief of each ref
		summaries []string // "<ref> <total>/<desired>" for each ref, then "total <total>/<desired>"
		conds     string   // reasons of PlacementVerified, PlacementRolledOut, ManifestworkApplied; "" = not checked
	}{
		{name: "settled decisions: missing and outdated works written, current ones left, undecided ones deleted",
			refs:  []RefFacts{refTo("all", placed(placementread.Ready, "c1", "c2", "c4"))},
			works: []*workv1.ManifestWork{owned("c1", "all", h, ok...), owned("c3", "all", h, ok...), owned("c4", "all", "old")},
			apply: []string{"create c2 (all)", "update c4 (all)"}, del: []string{"c3"}, keep: []string{"c1", "c4"},
			outcomes:  []string{"all: decided=3 failed=0 notYet=2 kept=0"},
			summaries: []string{"all 2/3", "total 2/3"}, conds: "AsExpected Progressing Processing"},
		{name: "Placement missing: its works kept, looked at again in recheckUnknown",
			refs:    []RefFacts{{Ref: workv1alpha1.LocalPlacementReference{Name: "all"}}},
			works:   []*workv1.ManifestWork{owned("c1", "all", h, ok...), owned("c2", "all", "old")},
			keep:    []string{"c1", "c2"},
			requeue: recheckUnknown, outcomes: []string{"all: unknown(not found in this namespace) decided=0 failed=0 notYet=0 kept=2"},
			summaries: []string{"all 2/0", "total 2/0"}, conds: "PlacementDecisionNotFound Progressing AsExpected"},
		{name: "Placement unreadable: its works kept",
			refs:    []RefFacts{{Ref: workv1alpha1.LocalPlacementReference{Name: "all"}, ReadErr: &placementread.ReadError{Namespace: ns, Name: "all", Err: errBoom}}},
			works:   []*workv1.ManifestWork{owned("c1", "all", h, ok...)},
			keep:    []string{"c1"},
			requeue: recheckUnknown, outcomes: []string{"all: unknown(could not be read: etcdserver: request timed out) decided=0 failed=0 notYet=0 kept=1"},
			summaries: []string{"all 1/0", "total 1/0"}, conds: "PlacementDecisionNotFound Progressing AsExpected"},
		{name: "decisions unreadable: its works kept",
			refs: []RefFacts{{Ref: workv1alpha1.LocalPlacementReference{Name: "all"}, Decisions: placementread.Decisions{Found: true},
				ReadErr: &placementread.ReadError{Decisions: true, Namespace: ns, Name: "all", Err: errBoom}}},
			works:   []*workv1.ManifestWork{owned("c1", "all", h, ok...)},
			keep:    []string{"c1"},
			requeue: recheckUnknown, outcomes: []string{"all: unknown(has decisions that could not be read: etcdserver: request timed out) decided=0 failed=0 notYet=0 kept=1"},
			summaries: []string{"all 1/0", "total 1/0"}},
		{name: "not scheduled for its current spec (Unknown): nothing written, its works kept",
			refs:    []RefFacts{refTo("all", notScheduled)},
			works:   []*workv1.ManifestWork{owned("c2", "all", h, ok...)},
			keep:    []string{"c2"},
			requeue: recheckUnknown, outcomes: []string{"all: unknown(has not published decisions for its current spec yet) decided=0 failed=0 notYet=0 kept=1"},
			summaries: []string{"all 1/0", "total 1/0"}},
		{name: "acceptance unreadable: nothing written, its works kept",
			refs: []RefFacts{with(refTo("all", placed(placementread.Ready, "c1", "c2")), func(rf *RefFacts) {
				rf.Accepted, rf.AcceptedErr = nil, errors.New("get ManagedCluster c1: boom")
			})},
			works:   []*workv1.ManifestWork{owned("c2", "all", "old")},
			keep:    []string{"c2"},
			requeue: recheckUnknown, outcomes: []string{"all: unknown(decides clusters whose acceptance could not be read: get ManagedCluster c1: boom) decided=0 failed=0 notYet=0 kept=1"},
			summaries: []string{"all 1/0", "total 1/0"}, conds: "PlacementDecisionNotFound Progressing AsExpected"},
		{name: "in flux: rolled out to the clusters listed, nothing deleted, looked at again within recheckInFlux",
			refs:    []RefFacts{refTo("all", placed(placementread.InFlux, "c1", "c3"))},
			works:   []*workv1.ManifestWork{owned("c2", "all", h, ok...)},
			apply:   []string{"create c1 (all)", "create c3 (all)"},
			keep:    []string{"c2"},
			requeue: recheckInFlux, outcomes: []string{"all: inFlux decided=2 failed=0 notYet=2 kept=1"},
			summaries: []string{"all 1/2", "total 1/2"}, conds: "AsExpected Progressing Processing"},
		{name: "in flux and acceptance unreadable: works kept, looked at again within recheckInFlux",
			refs: []RefFacts{with(refTo("all", placed(placementread.InFlux, "c1")), func(rf *RefFacts) {
				rf.Accepted, rf.AcceptedErr = nil, errors.New("boom")
			})},
			works:   []*workv1.ManifestWork{owned("c2", "all", h, ok...)},
			keep:    []string{"c2"},
			requeue: recheckInFlux, outcomes: []string{"all: unknown(decides clusters whose acceptance could not be read: boom) inFlux decided=0 failed=0 notYet=0 kept=1"},
			summaries: []string{"all 1/0", "total 1/0"}},
		{name: "decided clusters the hub has not accepted are held: no work written, a work they have kept",
			refs: []RefFacts{with(refTo("all", placed(placementread.Ready, "ok", "pending", "denied")), func(rf *RefFacts) {
				rf.Accepted = map[string]bool{"ok": true, "denied": false}
			})},
			works: []*workv1.ManifestWork{owned("denied", "all", "")},
			apply: []string{"create ok (all)"}, keep: []string{"denied"},
			outcomes:  []string{"all: decided=1 failed=0 notYet=1 kept=0 held=[pending denied]"},
			summaries: []string{"all 0/1", "total 1/1"}},
		{name: "a cluster no longer decided loses its work; one already being deleted is left alone",
			refs:  []RefFacts{refTo("all", placed(placementread.Ready, "c1"))},
			works: []*workv1.ManifestWork{owned("c1", "all", h, ok...), owned("c2", "all", "old"), gone},
			del:   []string{"c2"}, keep: []string{"c1"},
			outcomes:  []string{"all: decided=1 failed=0 notYet=0 kept=0"},
			summaries: []string{"all 1/1", "total 1/1"}, conds: "AsExpected Complete AsExpected"},
		{name: "a ref whose answer cannot be used keeps its works though another ref is settled",
			refs:  []RefFacts{refTo("a", placed(placementread.Ready, "c1")), {Ref: workv1alpha1.LocalPlacementReference{Name: "b"}}},
			works: []*workv1.ManifestWork{owned("c1", "a", h, ok...), owned("c2", "b", h, ok...)},
			keep:  []string{"c1", "c2"}, requeue: recheckUnknown,
			outcomes:  []string{"a: decided=1 failed=0 notYet=0 kept=0", "b: unknown(not found in this namespace) decided=0 failed=0 notYet=0 kept=1"},
			summaries: []string{"a 1/1", "b 1/0", "total 2/1"}, conds: "PlacementDecisionNotFound Progressing AsExpected"},
		{name: "two refs deciding one cluster: the first covers it, its work (whoever wrote it) is kept as it is",
			refs:  []RefFacts{refTo("a", placed(placementread.Ready, "c1", "c2")), refTo("b", placed(placementread.Ready, "c2", "c3"))},
			works: []*workv1.ManifestWork{owned("c2", "b", h)},
			apply: []string{"create c1 (a)", "create c3 (b)"}, keep: []string{"c2"},
			outcomes:  []string{"a: decided=2 failed=0 notYet=2 kept=0", "b: decided=1 failed=0 notYet=1 kept=0"},
			summaries: []string{"a 0/2", "b 0/1", "total 1/3"}},
		{name: "Progressive one at a time: only the next cluster's turn has come",
			refs: []RefFacts{with(refTo("all", placed(placementread.Ready, "c1", "c2", "c3")), strategy(clusterv1alpha1.RolloutStrategy{
				Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intstr.FromInt32(1)}}))},
			works: []*workv1.ManifestWork{owned("c1", "all", h, ok...), owned("c2", "all", "old")},
			apply: []string{"update c2 (all)"}, keep: []string{"c1", "c2"},
			outcomes:  []string{"all: decided=3 failed=0 notYet=2 kept=0"},
			summaries: []string{"all 2/3", "total 2/3"}, conds: "AsExpected Progressing Processing"},
		{name: "Progressive soak: the next cluster goes, looked at again when the soak ends",
			refs: []RefFacts{with(refTo("all", placed(placementread.Ready, "c1", "c2")), strategy(clusterv1alpha1.RolloutStrategy{
				Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{
					RolloutConfig: clusterv1alpha1.RolloutConfig{MinSuccessTime: metav1.Duration{Duration: 2 * time.Hour}}}}))},
			works: []*workv1.ManifestWork{owned("c1", "all", h, ok...)},
			apply: []string{"create c2 (all)"}, keep: []string{"c1"},
			requeue:   t0.Add(time.Minute + 2*time.Hour).Sub(now),
			outcomes:  []string{"all: decided=2 failed=0 notYet=1 kept=0"},
			summaries: []string{"all 1/2", "total 1/2"}},
		{name: "failed and timed-out works count as failed; nothing to write",
			refs: []RefFacts{with(refTo("all", placed(placementread.Ready, "c1", "c2", "c3")), strategy(clusterv1alpha1.RolloutStrategy{
				Type: clusterv1alpha1.All, All: &clusterv1alpha1.RolloutAll{RolloutConfig: clusterv1alpha1.RolloutConfig{ProgressDeadline: "10m"}}}))},
			works:     []*workv1.ManifestWork{owned("c1", "all", h, broken), owned("c2", "all", h), owned("c3", "all", h, ok...)},
			keep:      []string{"c1", "c2", "c3"},
			outcomes:  []string{"all: decided=3 failed=2 notYet=0 kept=0"},
			summaries: []string{"all 3/3", "total 3/3"}, conds: "AsExpected Progressing NotAsExpected"},
		{name: "invalid rollout strategy: nothing written, decided clusters keep their works, undecided ones lose them",
			refs:  []RefFacts{with(refTo("all", placed(placementread.Ready, "c1")), strategy(clusterv1alpha1.RolloutStrategy{Type: "Sideways"}))},
			works: []*workv1.ManifestWork{owned("c1", "all", "old"), owned("c2", "all", h)},
			del:   []string{"c2"}, keep: []string{"c1"},
			outcomes:  []string{"all: planErr decided=1 failed=0 notYet=0 kept=0"},
			summaries: []string{"all 1/1", "total 1/1"}, conds: "AsExpected Progressing AsExpected"},
		{name: "no placementRefs: every work goes",
			works:     []*workv1.ManifestWork{owned("c1", "all", h, ok...)},
			del:       []string{"c1"},
			summaries: []string{"total 0/0"}, conds: "PlacementDecisionNotFound Complete AsExpected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(Facts{Generation: 3, Hash: h, Now: now, Refs: tc.refs, Works: tc.works})

			var apply []string
			for _, a := range p.Apply {
				verb := "create"
				if a.Existing != nil {
					verb = "update"
					assert.Equal(t, a.Cluster, a.Existing.Namespace, "the cluster's own work")
				}
				apply = append(apply, fmt.Sprintf("%s %s (%s)", verb, a.Cluster, a.Placement))
				assert.Equal(t, h, a.Hash)
				assert.Equal(t, now, a.Started)
			}
			assert.Equal(t, tc.apply, apply, "apply")
			assert.Equal(t, tc.del, clustersOf(p.Delete), "delete")
			assert.Equal(t, tc.keep, clustersOf(p.Keep), "keep")
			assert.Equal(t, tc.requeue, p.RequeueAfter, "requeue")

			var outcomes []string
			for _, o := range p.Refs {
				outcomes = append(outcomes, brief(o))
			}
			assert.Equal(t, tc.outcomes, outcomes, "outcomes")

			require.NotNil(t, p.PlacementsSummary, "status.placementSummary is a list, even empty")
			var summaries []string
			for _, s := range p.PlacementsSummary {
				summaries = append(summaries, fmt.Sprintf("%s %d/%d", s.Name, s.Summary.Total, s.Summary.DesiredTotal))
			}
			summaries = append(summaries, fmt.Sprintf("total %d/%d", p.Summary.Total, p.Summary.DesiredTotal))
			assert.Equal(t, tc.summaries, summaries, "summaries")

			require.Len(t, p.Conditions, 3)
			if tc.conds != "" {
				assert.Equal(t, tc.conds, p.Conditions[0].Reason+" "+p.Conditions[1].Reason+" "+p.Conditions[2].Reason)
			}
		})
	}
}

func TestRender(t *testing.T) {
	m := testMWRS()
	m.Spec.ManifestWorkTemplate.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
	started := t0.Add(90 * time.Minute)

	w := render(m, Apply{Cluster: "c1", Placement: "all", Hash: "h", Started: started})
	assert.Equal(t, "app", w.Name)
	assert.Equal(t, "c1", w.Namespace)
	assert.Equal(t, map[string]string{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: ns + ".app",
		workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey: "all"}, w.Labels)
	assert.Equal(t, map[string]string{TemplateHashAnnotation: "h", RolloutStartedAnnotation: "2026-01-01T01:30:00Z"}, w.Annotations)
	assert.Equal(t, m.Spec.ManifestWorkTemplate, w.Spec)

	existing := owned("c1", "old-placement", "old")
	existing.Labels["team"] = "a"
	existing.ResourceVersion = "7"
	before := existing.DeepCopy()
	w = render(m, Apply{Cluster: "c1", Placement: "all", Existing: existing, Hash: "h", Started: started})
	assert.Equal(t, before, existing, "the work read is not changed")
	assert.Equal(t, "7", w.ResourceVersion, "an update of the work read")
	assert.Equal(t, "a", w.Labels["team"], "other labels stay")
	assert.Equal(t, "all", w.Labels[workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey])
	assert.Equal(t, "h", w.Annotations[TemplateHashAnnotation])
	assert.Equal(t, m.Spec.ManifestWorkTemplate, w.Spec)
}

func TestSummarize(t *testing.T) {
	ws := []*workv1.ManifestWork{
		work("h", 1, cond(workv1.WorkApplied, metav1.ConditionTrue, 1), cond(workv1.WorkAvailable, metav1.ConditionTrue, 1)),
		work("old", 1, cond(workv1.WorkApplied, metav1.ConditionTrue, 1), cond(workv1.WorkDegraded, metav1.ConditionTrue, 1)),
		work("h", 1, cond(workv1.WorkProgressing, metav1.ConditionTrue, 1)),
	}
	assert.Equal(t, workv1alpha1.ManifestWorkReplicaSetSummary{Total: 3, DesiredTotal: 5, Applied: 2, Available: 1, Degraded: 1, Progressing: 1, Updated: 2},
		Summarize(ws, func(string) string { return "h" }, 5))
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

func TestPlanStatus(t *testing.T) {
	p := plan(Facts{Generation: 2, Hash: "h", Now: t0, Refs: []RefFacts{refTo("all", placed(placementread.Ready))}})
	current := []metav1.Condition{
		{Type: workv1alpha1.ManifestWorkReplicaSetConditionPlacementVerified, Status: metav1.ConditionFalse, Reason: workv1alpha1.ReasonPlacementDecisionEmpty,
			Message: "Placement \"all\" selects no cluster", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(t0)},
		{Type: "Other", Status: metav1.ConditionTrue, Reason: "Kept"},
	}
	before := append([]metav1.Condition(nil), current...)
	st := p.status(current)
	assert.Equal(t, before, current, "the conditions read are not changed")
	assert.Equal(t, p.PlacementsSummary, st.PlacementsSummary)
	assert.Equal(t, p.Summary, st.Summary)
	require.Len(t, st.Conditions, 4, "the plan's three, and one it does not own")
	assert.Equal(t, "Other", st.Conditions[1].Type)
	v := st.Conditions[0]
	assert.Equal(t, int64(2), v.ObservedGeneration)
	assert.Equal(t, metav1.NewTime(t0), v.LastTransitionTime, "its status held: the transition time stays")
}
