package install

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"flotilla.dev/flotilla/hub/workreplicaset/rollout"
)

// State says where a cluster stands in an addon's rollout: no
// ManagedClusterAddOn yet is ToApply; manifests failed is Failed; manifests
// applied and the agent Available is Succeeded (since it became available);
// anything else is Progressing (since the ManagedClusterAddOn was created).
func State(mca *addonv1alpha1.ManagedClusterAddOn) (rollout.State, time.Time) {
	if mca == nil {
		return rollout.ToApply, time.Time{}
	}
	applied := meta.FindStatusCondition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnManifestApplied)
	if applied != nil && applied.Status == metav1.ConditionFalse && applied.Reason != addonv1alpha1.AddonAvailableReasonWorkNotApply {
		return rollout.Failed, applied.LastTransitionTime.Time
	}
	avail := meta.FindStatusCondition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
	if applied != nil && applied.Status == metav1.ConditionTrue && avail != nil && avail.Status == metav1.ConditionTrue {
		return rollout.Succeeded, avail.LastTransitionTime.Time
	}
	return rollout.Progressing, mca.CreationTimestamp.Time
}
