package deploy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/addons/framework"
)

// Reasons Flotilla adds where OCM names none.
const (
	ReasonNotDegraded        = "AsExpected"
	ReasonWorkDegraded       = "ManifestWorkDegraded"
	ReasonWaitingForAgent    = "WaitingForAgentLease"
	ReasonRegistrationDenied = RegistrationSetPermissionFailed
)

// RegistrationSetPermissionFailed and friends are OCM's RegistrationApplied reasons.
const (
	RegistrationNil                 = addonv1alpha1.RegistrationAppliedNilRegistration
	RegistrationSetPermissionFailed = addonv1alpha1.RegistrationAppliedSetPermissionFailed
	RegistrationSetPermissionOK     = addonv1alpha1.RegistrationAppliedSetPermissionApplied
)

// Facts are what one reconcile learned; Conditions turns them into conditions.
type Facts struct {
	Generation int64
	// RenderErr: the addon's manifests could not be rendered or packed into works.
	RenderErr error
	// Registration is the addon's registration (nil: none).
	Registration *framework.Registration
	// PermissionErr: the declared hub rights were refused or could not be written.
	PermissionErr error
	// Pending: why nothing new is rendered now (configs not set yet, missing,
	// or changed and waiting for this cluster's rollout turn). The Configured
	// condition is addons/install's; this only explains an empty delivery.
	Pending string
	// Works are the current deploy works (as read from the hub).
	Works []*workv1.ManifestWork
	// Health is the addon's health mode; Probe its WorkField probe.
	Health framework.HealthMode
	Probe  *framework.Probe
	// Existing are the conditions on the object now (Available under Lease stays the klusterlet's).
	Existing []metav1.Condition
}

// workState sums up works: all applied, any failed (with a message), any degraded.
func workState(ws []*workv1.ManifestWork) (applied bool, failed, degraded, waiting string) {
	applied = len(ws) > 0
	for _, w := range ws {
		c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
		switch {
		case c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == w.Generation:
			applied = false
			if failed == "" {
				failed = fmt.Sprintf("ManifestWork %s: %s", w.Name, c.Message)
			}
		case c == nil || c.Status != metav1.ConditionTrue || (c.ObservedGeneration != 0 && c.ObservedGeneration != w.Generation):
			applied = false
			if waiting == "" {
				waiting = w.Name
			}
		}
		if d := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkDegraded); d != nil && d.Status == metav1.ConditionTrue && degraded == "" {
			degraded = fmt.Sprintf("ManifestWork %s: %s", w.Name, d.Message)
		}
	}
	return applied, failed, degraded, waiting
}

// Conditions computes the ManagedClusterAddOn conditions the hub owns.
func Conditions(f Facts) []metav1.Condition {
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: f.Generation}
	}
	var out []metav1.Condition
	applied, failed, degraded, waiting := workState(f.Works)

	// ManifestApplied and Progressing.
	switch {
	case f.RenderErr != nil:
		msg := "The addon's manifests could not be rendered for this cluster: " + f.RenderErr.Error() + "; nothing new is delivered until the addon is fixed"
		out = append(out, cond(addonv1alpha1.ManagedClusterAddOnManifestApplied, metav1.ConditionFalse, addonv1alpha1.AddonManifestAppliedReasonManifestsApplyFailed, msg),
			cond(addonv1alpha1.ManagedClusterAddOnConditionProgressing, metav1.ConditionFalse, addonv1alpha1.ProgressingReasonFailed, msg))
	case failed != "":
		out = append(out, cond(addonv1alpha1.ManagedClusterAddOnManifestApplied, metav1.ConditionFalse, addonv1alpha1.AddonManifestAppliedReasonWorkApplyFailed, failed),
			cond(addonv1alpha1.ManagedClusterAddOnConditionProgressing, metav1.ConditionFalse, addonv1alpha1.ProgressingReasonFailed, failed))
	case applied:
		out = append(out, cond(addonv1alpha1.ManagedClusterAddOnManifestApplied, metav1.ConditionTrue, addonv1alpha1.AddonManifestAppliedReasonManifestsApplied,
			fmt.Sprintf("The addon's %d ManifestWorks are applied on the cluster", len(f.Works))),
			cond(addonv1alpha1.ManagedClusterAddOnConditionProgressing, metav1.ConditionFalse, addonv1alpha1.ProgressingReasonCompleted, "The addon is installed"))
	default:
		msg := "No ManifestWork delivered yet"
		if f.Pending != "" && len(f.Works) == 0 {
			msg += ": " + f.Pending
		}
		if waiting != "" {
			msg = "Waiting for the cluster's work agent to apply ManifestWork " + waiting
		}
		out = append(out, cond(addonv1alpha1.ManagedClusterAddOnManifestApplied, metav1.ConditionFalse, addonv1alpha1.AddonAvailableReasonWorkNotApply, msg),
			cond(addonv1alpha1.ManagedClusterAddOnConditionProgressing, metav1.ConditionTrue, addonv1alpha1.ProgressingReasonProgressing, msg))
	}

	// Degraded.
	if degraded != "" {
		out = append(out, cond(addonv1alpha1.ManagedClusterAddOnConditionDegraded, metav1.ConditionTrue, ReasonWorkDegraded, degraded))
	} else {
		out = append(out, cond(addonv1alpha1.ManagedClusterAddOnConditionDegraded, metav1.ConditionFalse, ReasonNotDegraded, "No ManifestWork of the addon is degraded"))
	}

	// RegistrationApplied.
	switch {
	case f.Registration == nil:
		out = append(out, cond(addonv1alpha1.ManagedClusterAddOnRegistrationApplied, metav1.ConditionTrue, RegistrationNil, "The addon's agent needs no hub credential"))
	case f.PermissionErr != nil:
		out = append(out, cond(addonv1alpha1.ManagedClusterAddOnRegistrationApplied, metav1.ConditionFalse, RegistrationSetPermissionFailed,
			"The agent's hub rights were not granted: "+f.PermissionErr.Error()))
	default:
		out = append(out, cond(addonv1alpha1.ManagedClusterAddOnRegistrationApplied, metav1.ConditionTrue, RegistrationSetPermissionOK,
			fmt.Sprintf("The agent's registration is published and its %d hub permission rules are granted in the cluster namespace", len(f.Registration.Permissions))))
	}

	// Available, unless the klusterlet owns it (Lease).
	if a := available(f, applied, failed); a != nil {
		out = append(out, *a)
	}
	return out
}

func available(f Facts, applied bool, failed string) *metav1.Condition {
	c := &metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, ObservedGeneration: f.Generation}
	set := func(s metav1.ConditionStatus, reason, msg string) *metav1.Condition {
		c.Status, c.Reason, c.Message = s, reason, msg
		return c
	}
	switch f.Health {
	case framework.HealthNone:
		switch {
		case applied:
			return set(metav1.ConditionTrue, addonv1alpha1.AddonAvailableReasonWorkApply, "The addon's manifests are applied (health mode None)")
		case failed != "":
			return set(metav1.ConditionFalse, addonv1alpha1.AddonAvailableReasonWorkApplyFailed, failed)
		case len(f.Works) == 0:
			return set(metav1.ConditionUnknown, addonv1alpha1.AddonAvailableReasonWorkNotFound, "No ManifestWork of the addon exists yet")
		}
		return set(metav1.ConditionUnknown, addonv1alpha1.AddonAvailableReasonWorkNotApply, "The addon's manifests are not applied yet")
	case framework.HealthWorkField:
		results := ProbeResults(f.Works, f.Probe)
		if len(results) == 0 {
			return set(metav1.ConditionUnknown, addonv1alpha1.AddonAvailableReasonNoProbeResult, "No status feedback for the probed fields yet")
		}
		if err := f.Probe.Check(results); err != nil {
			return set(metav1.ConditionFalse, addonv1alpha1.AddonAvailableReasonProbeUnavailable, "Probe: "+err.Error())
		}
		return set(metav1.ConditionTrue, addonv1alpha1.AddonAvailableReasonProbeAvailable, "The probed fields say the agent is available")
	}
	// Lease: the klusterlet reports; say what we wait for until it does.
	if meta.FindStatusCondition(f.Existing, addonv1alpha1.ManagedClusterAddOnConditionAvailable) != nil {
		return nil
	}
	return set(metav1.ConditionUnknown, ReasonWaitingForAgent, "Waiting for the klusterlet to report the agent's lease")
}

// ProbeResults collects the feedback values of probe's fields from works.
func ProbeResults(works []*workv1.ManifestWork, probe *framework.Probe) []framework.FieldResult {
	if probe == nil {
		return nil
	}
	var out []framework.FieldResult
	for _, field := range probe.Fields {
		for _, w := range works {
			for _, m := range w.Status.ResourceStatus.Manifests {
				r := m.ResourceMeta
				if r.Group == field.Resource.Group && r.Resource == field.Resource.Resource && r.Name == field.Resource.Name &&
					r.Namespace == field.Resource.Namespace && len(m.StatusFeedbacks.Values) > 0 {
					out = append(out, framework.FieldResult{Resource: field.Resource, Values: m.StatusFeedbacks.Values})
				}
			}
		}
	}
	return out
}

// Merge sets want on existing, keeping LastTransitionTime where the status is unchanged.
func Merge(existing []metav1.Condition, want []metav1.Condition) []metav1.Condition {
	out := append([]metav1.Condition(nil), existing...)
	for _, c := range want {
		meta.SetStatusCondition(&out, c)
	}
	return out
}
