package status

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

func rmeta(ordinal int32, kind, ns, name string) workv1.ManifestResourceMeta {
	return workv1.ManifestResourceMeta{Ordinal: ordinal, Kind: kind, Version: "v1", Namespace: ns, Name: name}
}

type want struct {
	status  metav1.ConditionStatus
	reason  string
	message string // substring
}

func check(t *testing.T, conds []metav1.Condition, typ string, w want) {
	t.Helper()
	c := meta.FindStatusCondition(conds, typ)
	if w.status == "" {
		assert.Nil(t, c, "condition %s should be absent", typ)
		return
	}
	require.NotNil(t, c, "condition %s", typ)
	assert.Equal(t, w.status, c.Status, typ)
	assert.Equal(t, w.reason, c.Reason, typ)
	assert.Contains(t, c.Message, w.message, typ)
}

func TestManifest(t *testing.T) {
	cases := []struct {
		name                     string
		r                        ManifestResult
		applied, available, sync want
	}{
		{"applied and present",
			ManifestResult{Meta: rmeta(0, "ConfigMap", "ns", "a"), Availability: Exists},
			want{"True", "AppliedManifestComplete", "Apply manifest complete"},
			want{"True", "ResourceAvailable", ""}, want{}},
		{"apply failed keeps the apiserver's message",
			ManifestResult{Meta: rmeta(1, "Widget", "ns", "w"), ApplyErr: errors.New(`no matches for kind "Widget" in version "example.com/v1"`)},
			want{"False", "AppliedManifestFailed", `no matches for kind "Widget"`},
			want{"Unknown", "ResourceStatusUnknown", ""}, want{}},
		{"applied but gone",
			ManifestResult{Meta: rmeta(0, "ConfigMap", "ns", "a"), Availability: Missing},
			want{"True", "AppliedManifestComplete", ""}, want{"False", "ResourceNotAvailable", ""}, want{}},
		{"read-only",
			ManifestResult{Meta: rmeta(0, "Deployment", "ns", "d"), ReadOnly: true, Availability: Exists},
			want{"True", "AppliedManifestComplete", "Read-only"}, want{"True", "ResourceAvailable", ""}, want{}},
		{"feedback synced",
			ManifestResult{Meta: rmeta(0, "Deployment", "ns", "d"), Availability: Exists, HasFeedbackRules: true,
				Feedback: []workv1.FeedbackValue{intValue("Replicas", 1)}},
			want{"True", "AppliedManifestComplete", ""}, want{"True", "ResourceAvailable", ""}, want{"True", "StatusFeedbackSynced", ""}},
		{"feedback failed",
			ManifestResult{Meta: rmeta(0, "Deployment", "ns", "d"), Availability: Exists, HasFeedbackRules: true,
				FeedbackErr: errors.New("x: path .x has no value")},
			want{"True", "AppliedManifestComplete", ""}, want{"True", "ResourceAvailable", ""}, want{"False", "StatusFeedbackSyncFailed", "path .x"}},
		{"feedback on a missing resource",
			ManifestResult{Meta: rmeta(0, "Deployment", "ns", "d"), Availability: Missing, HasFeedbackRules: true},
			want{"True", "AppliedManifestComplete", ""}, want{"False", "ResourceNotAvailable", ""}, want{"False", "StatusFeedbackSyncFailed", "not available"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Manifest(nil, tc.r, 3)
			assert.Equal(t, tc.r.Meta, got.ResourceMeta)
			check(t, got.Conditions, "Applied", tc.applied)
			check(t, got.Conditions, "Available", tc.available)
			check(t, got.Conditions, "StatusFeedbackSynced", tc.sync)
			for _, c := range got.Conditions {
				assert.Equal(t, int64(3), c.ObservedGeneration)
			}
		})
	}
}

func TestManifestKeepsTransitionTimeAndDropsStaleFeedbackCondition(t *testing.T) {
	old := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	prev := &workv1.ManifestCondition{Conditions: []metav1.Condition{
		{Type: "Applied", Status: "True", Reason: "AppliedManifestComplete", LastTransitionTime: old},
		{Type: "StatusFeedbackSynced", Status: "True", Reason: "StatusFeedbackSynced", LastTransitionTime: old},
	}}
	got := Manifest(prev, ManifestResult{Meta: rmeta(0, "ConfigMap", "", "a"), Availability: Exists}, 2)
	assert.Equal(t, old, meta.FindStatusCondition(got.Conditions, "Applied").LastTransitionTime)
	assert.Nil(t, meta.FindStatusCondition(got.Conditions, "StatusFeedbackSynced"))
}

func TestWork(t *testing.T) {
	ok := ManifestResult{Meta: rmeta(0, "Namespace", "", "ns"), Availability: Exists}
	failed := ManifestResult{Meta: rmeta(1, "Widget", "ns", "w"), ApplyErr: errors.New("boom")}
	missing := ManifestResult{Meta: rmeta(2, "ConfigMap", "ns", "cm"), Availability: Missing}
	cases := []struct {
		name               string
		results            []ManifestResult
		applied, available want
	}{
		{"all good", []ManifestResult{ok, ok},
			want{"True", "AppliedManifestWorkComplete", "Apply manifest work complete"},
			want{"True", "ResourcesAvailable", "All resources are available"}},
		{"one failed names it", []ManifestResult{ok, failed},
			want{"False", "AppliedManifestWorkFailed", "1 of 2 manifests failed: manifest 1 (Widget ns/w)"},
			want{"Unknown", "ResourcesStatusUnknown", "manifest 1 (Widget ns/w)"}},
		{"not available wins over unknown", []ManifestResult{failed, missing},
			want{"False", "AppliedManifestWorkFailed", "1 of 2"},
			want{"False", "ResourcesNotAvailable", "manifest 2 (ConfigMap ns/cm)"}},
		{"no manifests", nil,
			want{"True", "AppliedManifestWorkComplete", ""}, want{"True", "ResourcesAvailable", ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := Build(workv1.ManifestWorkStatus{}, tc.results, 1)
			require.Len(t, st.ResourceStatus.Manifests, len(tc.results))
			check(t, st.Conditions, "Applied", tc.applied)
			check(t, st.Conditions, "Available", tc.available)
		})
	}
}

func TestWorkMessageIsBounded(t *testing.T) {
	var rs []ManifestResult
	for i := 0; i < 50; i++ {
		rs = append(rs, ManifestResult{Meta: rmeta(int32(i), "ConfigMap", "ns", "c"), ApplyErr: errors.New("x")})
	}
	st := Build(workv1.ManifestWorkStatus{}, rs, 1)
	c := meta.FindStatusCondition(st.Conditions, "Applied")
	assert.Contains(t, c.Message, "50 of 50 manifests failed")
	assert.Contains(t, c.Message, "and 45 more")
}

func TestBuildIsStable(t *testing.T) {
	rs := []ManifestResult{{Meta: rmeta(0, "ConfigMap", "ns", "a"), Availability: Exists}}
	first := Build(workv1.ManifestWorkStatus{}, rs, 1)
	second := Build(first, rs, 1)
	assert.Equal(t, first, second, "the same facts must give the same status, so nothing is written")
}

func TestConflictConditions(t *testing.T) {
	meta0 := workv1.ManifestResourceMeta{Ordinal: 0, Kind: "ConfigMap", Namespace: "default", Name: "shared", Version: "v1", Resource: "configmaps"}
	keeper := ManifestResult{Meta: meta0, Availability: Exists, Conflict: "also in cluster1/b"}
	newcomer := ManifestResult{Meta: meta0, Availability: Exists, ApplyErr: errors.New("managed by cluster1/a"), ApplyConflict: true, Conflict: "managed by cluster1/a"}

	st := Build(workv1.ManifestWorkStatus{}, []ManifestResult{keeper}, 1)
	m := st.ResourceStatus.Manifests[0]
	assert.True(t, meta.IsStatusConditionTrue(m.Conditions, workv1.ManifestApplied), "the keeper stays Applied")
	c := meta.FindStatusCondition(m.Conditions, ConditionConflict)
	require.NotNil(t, c)
	assert.Equal(t, ReasonManifestConflict, c.Reason)
	assert.Equal(t, "also in cluster1/b", c.Message)
	assert.True(t, meta.IsStatusConditionTrue(st.Conditions, workv1.WorkApplied))
	wc := meta.FindStatusCondition(st.Conditions, ConditionConflict)
	require.NotNil(t, wc)
	assert.Contains(t, wc.Message, "manifest 0 (ConfigMap default/shared)")

	st = Build(workv1.ManifestWorkStatus{}, []ManifestResult{newcomer}, 1)
	a := meta.FindStatusCondition(st.ResourceStatus.Manifests[0].Conditions, workv1.ManifestApplied)
	require.NotNil(t, a)
	assert.Equal(t, metav1.ConditionFalse, a.Status)
	assert.Equal(t, ReasonManifestConflict, a.Reason)
	assert.Equal(t, "managed by cluster1/a", a.Message)
	assert.False(t, meta.IsStatusConditionTrue(st.Conditions, workv1.WorkApplied))

	// The conflict ends: both conditions go.
	st = Build(st, []ManifestResult{{Meta: meta0, Availability: Exists}}, 2)
	assert.Nil(t, meta.FindStatusCondition(st.ResourceStatus.Manifests[0].Conditions, ConditionConflict))
	assert.Nil(t, meta.FindStatusCondition(st.Conditions, ConditionConflict))
	assert.True(t, meta.IsStatusConditionTrue(st.Conditions, workv1.WorkApplied))
}
