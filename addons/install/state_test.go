package install

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"flotilla.dev/flotilla/hub/workreplicaset/rollout"
)

var adc = addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}

func ref(name, hash string) addonv1alpha1.ConfigReference {
	r := addonv1alpha1.ConfigReferent{Namespace: "ns", Name: name}
	return addonv1alpha1.ConfigReference{ConfigGroupResource: adc, ConfigReferent: r, DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: r, SpecHash: hash}}
}

func applied(r addonv1alpha1.ConfigReference) addonv1alpha1.ConfigReference {
	r.LastAppliedConfig = r.DesiredConfig.DeepCopy()
	return r
}

func TestState(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	configured := created.Add(time.Second)
	avail := created.Add(time.Minute)
	mca := func(refs []addonv1alpha1.ConfigReference, conds ...metav1.Condition) *addonv1alpha1.ManagedClusterAddOn {
		conds = append(conds, metav1.Condition{Type: "Configured", Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(configured)})
		return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
			Status: addonv1alpha1.ManagedClusterAddOnStatus{Conditions: conds, ConfigReferences: refs}}
	}
	manifests := func(s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: "ManifestApplied", Status: s, Reason: reason, LastTransitionTime: metav1.NewTime(created)}
	}
	available := metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(avail)}
	notConfigured := &addonv1alpha1.ManagedClusterAddOn{Status: addonv1alpha1.ManagedClusterAddOnStatus{Conditions: []metav1.Condition{
		{Type: "Configured", Status: metav1.ConditionFalse, Reason: ReasonNotConfigured}}}}
	v1, v2 := ref("tuning", "h1"), ref("tuning", "h2")
	for _, tc := range []struct {
		name    string
		mca     *addonv1alpha1.ManagedClusterAddOn
		desired []addonv1alpha1.ConfigReference
		state   rollout.State
		since   time.Time
	}{
		{"not installed", nil, nil, rollout.ToApply, time.Time{}},
		{"never configured", &addonv1alpha1.ManagedClusterAddOn{}, nil, rollout.ToApply, time.Time{}},
		{"waiting for its turn", notConfigured, nil, rollout.ToApply, time.Time{}},
		{"just configured", mca(nil), nil, rollout.Progressing, configured},
		{"waiting for the work agent", mca(nil, manifests(metav1.ConditionFalse, "WorkNotApplied")), nil, rollout.Progressing, configured},
		{"applied, agent not available yet", mca(nil, manifests(metav1.ConditionTrue, "AddonManifestApplied")), nil, rollout.Progressing, configured},
		{"applied and available", mca(nil, manifests(metav1.ConditionTrue, "AddonManifestApplied"), available), nil, rollout.Succeeded, avail},
		{"apply failed", mca(nil, manifests(metav1.ConditionFalse, "ManifestWorkApplyFailed")), nil, rollout.Failed, created},
		{"manifests do not render", mca(nil, manifests(metav1.ConditionFalse, "AddonManifestAppliedFailed")), nil, rollout.Failed, created},
		{"config changed", mca([]addonv1alpha1.ConfigReference{applied(v1)}, manifests(metav1.ConditionTrue, "AddonManifestApplied"), available),
			[]addonv1alpha1.ConfigReference{v2}, rollout.ToApply, time.Time{}},
		{"new config not applied yet", mca([]addonv1alpha1.ConfigReference{v2}, manifests(metav1.ConditionTrue, "AddonManifestApplied"), available),
			[]addonv1alpha1.ConfigReference{v2}, rollout.Progressing, configured},
		{"new config applied", mca([]addonv1alpha1.ConfigReference{applied(v2)}, manifests(metav1.ConditionTrue, "AddonManifestApplied"), available),
			[]addonv1alpha1.ConfigReference{v2}, rollout.Succeeded, avail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, since := State(tc.mca, tc.desired)
			assert.Equal(t, tc.state, s)
			assert.True(t, tc.since.Equal(since), "since %v, want %v", since, tc.since)
		})
	}
}

func TestRolloutFacts(t *testing.T) {
	base := &addonv1alpha1.ManagedClusterAddOn{Status: addonv1alpha1.ManagedClusterAddOnStatus{Conditions: []metav1.Condition{
		{Type: "Available", Status: metav1.ConditionTrue, Reason: "WorkApplied"}, {Type: "Degraded", Status: metav1.ConditionFalse}}}}
	other := base.DeepCopy()
	other.Status.Conditions[1].Status = metav1.ConditionTrue
	other.Status.Namespace = "elsewhere"
	assert.Equal(t, RolloutFacts(base), RolloutFacts(other), "Degraded and the namespace do not change the plan")
	other.Status.Conditions[0].Status = metav1.ConditionFalse
	assert.NotEqual(t, RolloutFacts(base), RolloutFacts(other), "Available does")
	other = base.DeepCopy()
	other.Status.ConfigReferences = []addonv1alpha1.ConfigReference{ref("x", "h")}
	assert.NotEqual(t, RolloutFacts(base), RolloutFacts(other), "configReferences do")
}
