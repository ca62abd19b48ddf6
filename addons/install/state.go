package install

import (
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"flotilla.dev/flotilla/hub/workreplicaset/rollout"
)

// State says where a cluster stands in an addon's rollout of desired, the
// configs that should apply to it now:
//
//   - ToApply: no ManagedClusterAddOn yet, or its status.configReferences do not
//     name desired (with the same spec hashes), or it is not Configured yet;
//   - Failed: its manifests failed to render or apply (since then);
//   - Succeeded: every desired config is its lastAppliedConfig, the manifests
//     are applied and the agent is Available (since the latest of those);
//   - Progressing otherwise (since its configs were set, the Configured
//     condition's lastTransitionTime).
func State(mca *addonv1alpha1.ManagedClusterAddOn, desired []addonv1alpha1.ConfigReference) (rollout.State, time.Time) {
	if mca == nil {
		return rollout.ToApply, time.Time{}
	}
	configured := meta.FindStatusCondition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionConfigured)
	if configured == nil || configured.Status != metav1.ConditionTrue || !SameDesired(mca.Status.ConfigReferences, desired) {
		return rollout.ToApply, time.Time{}
	}
	applied := meta.FindStatusCondition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnManifestApplied)
	if applied != nil && applied.Status == metav1.ConditionFalse && applied.Reason != addonv1alpha1.AddonAvailableReasonWorkNotApply {
		return rollout.Failed, applied.LastTransitionTime.Time
	}
	avail := meta.FindStatusCondition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
	if applied != nil && applied.Status == metav1.ConditionTrue && avail != nil && avail.Status == metav1.ConditionTrue && allApplied(mca.Status.ConfigReferences) {
		since := avail.LastTransitionTime.Time
		for _, c := range []*metav1.Condition{applied, configured} {
			if c.LastTransitionTime.After(since) {
				since = c.LastTransitionTime.Time
			}
		}
		return rollout.Succeeded, since
	}
	return rollout.Progressing, configured.LastTransitionTime.Time
}

// SameDesired reports whether refs name exactly the configs of desired, with
// the same spec hashes, in any order.
func SameDesired(refs, desired []addonv1alpha1.ConfigReference) bool {
	if len(refs) != len(desired) {
		return false
	}
	want := map[addonv1alpha1.ConfigGroupResource]addonv1alpha1.ConfigSpecHash{}
	for _, d := range desired {
		if d.DesiredConfig != nil {
			want[d.ConfigGroupResource] = *d.DesiredConfig
		}
	}
	for _, r := range refs {
		w, ok := want[r.ConfigGroupResource]
		if !ok || r.DesiredConfig == nil || *r.DesiredConfig != w {
			return false
		}
	}
	return true
}

func allApplied(refs []addonv1alpha1.ConfigReference) bool {
	for _, r := range refs {
		if r.DesiredConfig == nil || r.LastAppliedConfig == nil || *r.LastAppliedConfig != *r.DesiredConfig {
			return false
		}
	}
	return true
}

// RolloutFacts sums up what Plan reads of a ManagedClusterAddOn (deletion,
// spec.configs, configReferences, the conditions State reads): an update that
// leaves it unchanged needs no new plan. Deploy writes statuses often (work
// status, health); most of those writes change nothing here.
func RolloutFacts(o any) string {
	mca, ok := o.(*addonv1alpha1.ManagedClusterAddOn)
	if !ok {
		return ""
	}
	type cond struct{ Status, Reason, Message, Since string }
	facts := struct {
		Deleting bool
		Configs  []addonv1alpha1.AddOnConfig
		Refs     []addonv1alpha1.ConfigReference
		Conds    map[string]cond
	}{Deleting: mca.DeletionTimestamp != nil, Configs: mca.Spec.Configs, Refs: mca.Status.ConfigReferences, Conds: map[string]cond{}}
	for _, t := range []string{addonv1alpha1.ManagedClusterAddOnConditionConfigured, addonv1alpha1.ManagedClusterAddOnManifestApplied,
		addonv1alpha1.ManagedClusterAddOnConditionAvailable} {
		if c := meta.FindStatusCondition(mca.Status.Conditions, t); c != nil {
			facts.Conds[t] = cond{string(c.Status), c.Reason, c.Message, c.LastTransitionTime.String()}
		}
	}
	raw, _ := json.Marshal(facts)
	return string(raw)
}
