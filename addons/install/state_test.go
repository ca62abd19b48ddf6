package install

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"flotilla.dev/flotilla/hub/workreplicaset/rollout"
)

func TestState(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	avail := created.Add(time.Minute)
	mca := func(conds ...metav1.Condition) *addonv1alpha1.ManagedClusterAddOn {
		return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
			Status: addonv1alpha1.ManagedClusterAddOnStatus{Conditions: conds}}
	}
	applied := func(s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: "ManifestApplied", Status: s, Reason: reason}
	}
	available := metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(avail)}
	for _, tc := range []struct {
		name  string
		mca   *addonv1alpha1.ManagedClusterAddOn
		state rollout.State
		since time.Time
	}{
		{"not installed", nil, rollout.ToApply, time.Time{}},
		{"just created", mca(), rollout.Progressing, created},
		{"waiting for the work agent", mca(applied(metav1.ConditionFalse, "WorkNotApplied")), rollout.Progressing, created},
		{"applied, agent not available yet", mca(applied(metav1.ConditionTrue, "AddonManifestApplied")), rollout.Progressing, created},
		{"applied and available", mca(applied(metav1.ConditionTrue, "AddonManifestApplied"), available), rollout.Succeeded, avail},
		{"apply failed", mca(applied(metav1.ConditionFalse, "ManifestWorkApplyFailed")), rollout.Failed, time.Time{}},
		{"manifests do not render", mca(applied(metav1.ConditionFalse, "AddonManifestAppliedFailed")), rollout.Failed, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, since := State(tc.mca)
			assert.Equal(t, tc.state, s)
			assert.True(t, tc.since.Equal(since), "since %v, want %v", since, tc.since)
		})
	}
}
