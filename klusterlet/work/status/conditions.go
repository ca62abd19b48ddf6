package status

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/klusterlet/work/rules"
)

// Condition types and reasons. The work-level and per-manifest Applied and
// Available reasons are OCM's.
const (
	ConditionStatusFeedbackSynced = "StatusFeedbackSynced"

	ReasonAppliedManifestWorkComplete = "AppliedManifestWorkComplete"
	ReasonAppliedManifestWorkFailed   = "AppliedManifestWorkFailed"
	ReasonResourcesAvailable          = "ResourcesAvailable"
	ReasonResourcesNotAvailable       = "ResourcesNotAvailable"
	ReasonResourcesStatusUnknown      = "ResourcesStatusUnknown"

	ReasonResourceAvailable     = "ResourceAvailable"
	ReasonResourceNotAvailable  = "ResourceNotAvailable"
	ReasonResourceStatusUnknown = "ResourceStatusUnknown"
	ReasonStatusFeedbackSynced  = "StatusFeedbackSynced"
	ReasonStatusFeedbackFailed  = "StatusFeedbackSyncFailed"

	// ConditionConflict (per manifest and per work) says a manifest's object
	// is also in another ManifestWork with different content; Flotilla's own
	// (OCM lets such works overwrite each other).
	ConditionConflict = ocm.WorkConditionConflict
	// ReasonManifestConflict is the reason of Conflict=True and of the
	// Applied=False of the manifest that is not applied because of it.
	ReasonManifestConflict = "ManifestConflict"
)

// Availability is what the agent knows about a manifest's resource on the
// managed cluster.
type Availability int

const (
	// Unknown: the agent could not tell (the manifest could not be mapped, or
	// reading the resource failed).
	Unknown Availability = iota
	// Exists: the resource is on the managed cluster.
	Exists
	// Missing: the resource is not on the managed cluster.
	Missing
)

// ManifestResult is what the agent observed for one manifest.
type ManifestResult struct {
	// Meta identifies the manifest (Ordinal is its index in the work).
	Meta workv1.ManifestResourceMeta
	// ApplyErr is why applying failed; nil means applied (or, for ReadOnly,
	// nothing to apply).
	ApplyErr error
	// ReadOnly is set for manifests with the ReadOnly update strategy.
	ReadOnly bool
	// Availability of the resource after applying.
	Availability Availability
	// AvailabilityMessage explains Unknown availability.
	AvailabilityMessage string
	// HasFeedbackRules is set when the manifest has feedback rules; only then is
	// StatusFeedbackSynced reported.
	HasFeedbackRules bool
	// Feedback values that were read.
	Feedback []workv1.FeedbackValue
	// FeedbackErr is why some feedback values could not be read.
	FeedbackErr error
	// Conflict, when set, says the manifest's object is also in another work
	// with different content (the Conflict condition's message).
	Conflict string
	// ApplyConflict says ApplyErr is that conflict: the manifest was not
	// applied because another work keeps the object.
	ApplyConflict bool
	// RulesEvaluated says the manifest's condition rules were evaluated on
	// its live object this pass, giving Rules (package rules). When false,
	// rule conditions of the current generation are kept as they were.
	RulesEvaluated bool
	Rules          []metav1.Condition
}

// Manifest builds the status of one manifest. prev is the manifest's previous
// status (nil when new), so condition transition times survive.
func Manifest(prev *workv1.ManifestCondition, r ManifestResult, generation int64) workv1.ManifestCondition {
	out := workv1.ManifestCondition{ResourceMeta: r.Meta}
	if prev != nil {
		out.Conditions = append([]metav1.Condition(nil), prev.Conditions...)
	}
	applied := metav1.Condition{Type: workv1.ManifestApplied, ObservedGeneration: generation}
	switch {
	case r.ApplyErr != nil && r.ApplyConflict:
		applied.Status, applied.Reason, applied.Message = metav1.ConditionFalse, ReasonManifestConflict, r.ApplyErr.Error()
	case r.ApplyErr != nil:
		applied.Status, applied.Reason, applied.Message = metav1.ConditionFalse, workv1.AppliedManifestFailed,
			fmt.Sprintf("Failed to apply manifest: %v", r.ApplyErr)
		// An error may name its own reason (an unusable ignoreFields entry:
		// AppliedManifestSSAIgnoreFieldError).
		var withReason interface{ Reason() string }
		if errors.As(r.ApplyErr, &withReason) {
			applied.Reason = withReason.Reason()
		}
	case r.ReadOnly:
		applied.Status, applied.Reason, applied.Message = metav1.ConditionTrue, workv1.AppliedManifestComplete,
			"Read-only manifest: nothing applied, status is read"
	default:
		applied.Status, applied.Reason, applied.Message = metav1.ConditionTrue, workv1.AppliedManifestComplete, "Apply manifest complete"
	}
	meta.SetStatusCondition(&out.Conditions, applied)

	avail := metav1.Condition{Type: workv1.ManifestAvailable, ObservedGeneration: generation}
	switch r.Availability {
	case Exists:
		avail.Status, avail.Reason, avail.Message = metav1.ConditionTrue, ReasonResourceAvailable, "Resource is available"
	case Missing:
		avail.Status, avail.Reason, avail.Message = metav1.ConditionFalse, ReasonResourceNotAvailable, "Resource is not available"
	default:
		msg := r.AvailabilityMessage
		if msg == "" {
			msg = "Resource status is unknown"
		}
		avail.Status, avail.Reason, avail.Message = metav1.ConditionUnknown, ReasonResourceStatusUnknown, msg
	}
	meta.SetStatusCondition(&out.Conditions, avail)

	if r.Conflict != "" {
		meta.SetStatusCondition(&out.Conditions, metav1.Condition{Type: ConditionConflict, Status: metav1.ConditionTrue,
			Reason: ReasonManifestConflict, Message: r.Conflict, ObservedGeneration: generation})
	} else {
		meta.RemoveStatusCondition(&out.Conditions, ConditionConflict)
	}

	setRuleConditions(&out.Conditions, r, generation)

	if r.HasFeedbackRules {
		fb := metav1.Condition{Type: ConditionStatusFeedbackSynced, ObservedGeneration: generation}
		switch {
		case r.FeedbackErr != nil:
			fb.Status, fb.Reason, fb.Message = metav1.ConditionFalse, ReasonStatusFeedbackFailed, r.FeedbackErr.Error()
		case r.Availability != Exists:
			fb.Status, fb.Reason, fb.Message = metav1.ConditionFalse, ReasonStatusFeedbackFailed, "Resource is not available to read status from"
		default:
			fb.Status, fb.Reason, fb.Message = metav1.ConditionTrue, ReasonStatusFeedbackSynced, ""
		}
		meta.SetStatusCondition(&out.Conditions, fb)
		out.StatusFeedbacks.Values = r.Feedback
	} else {
		meta.RemoveStatusCondition(&out.Conditions, ConditionStatusFeedbackSynced)
	}
	return out
}

// setRuleConditions puts the conditions the manifest's rules produced, and
// removes rule conditions no rule produces any more (as OCM: those of an
// earlier generation, when the rules could not be evaluated now).
func setRuleConditions(conds *[]metav1.Condition, r ManifestResult, generation int64) {
	produced := map[string]bool{}
	for _, c := range r.Rules {
		c.ObservedGeneration = generation
		meta.SetStatusCondition(conds, c)
		produced[c.Type] = true
	}
	*conds = slices.DeleteFunc(*conds, func(c metav1.Condition) bool {
		if !rules.FromRule(c) {
			return false
		}
		if r.RulesEvaluated {
			return !produced[c.Type]
		}
		return c.ObservedGeneration != generation
	})
}

// Completed says a manifest is no longer to be updated: a condition rule
// made it (or the whole work) Complete, as OCM's agent reads it.
func Completed(prev workv1.ManifestWorkStatus, m workv1.ManifestResourceMeta) bool {
	if meta.IsStatusConditionTrue(prev.Conditions, workv1.WorkComplete) {
		return true
	}
	for _, p := range prev.ResourceStatus.Manifests {
		pm := p.ResourceMeta
		if pm.Group == m.Group && pm.Version == m.Version && pm.Kind == m.Kind && pm.Resource == m.Resource &&
			pm.Namespace == m.Namespace && pm.Name == m.Name {
			return meta.IsStatusConditionTrue(p.Conditions, workv1.ManifestComplete)
		}
	}
	return false
}

// Build computes the whole ManifestWork status from the results of one pass,
// keeping transition times from prev.
func Build(prev workv1.ManifestWorkStatus, results []ManifestResult, generation int64) workv1.ManifestWorkStatus {
	out := workv1.ManifestWorkStatus{Conditions: append([]metav1.Condition(nil), prev.Conditions...)}
	for _, r := range results {
		out.ResourceStatus.Manifests = append(out.ResourceStatus.Manifests,
			Manifest(findPrev(prev.ResourceStatus.Manifests, r.Meta), r, generation))
	}
	Work(&out.Conditions, out.ResourceStatus.Manifests, generation)
	return out
}

func findPrev(prev []workv1.ManifestCondition, m workv1.ManifestResourceMeta) *workv1.ManifestCondition {
	for i := range prev {
		if prev[i].ResourceMeta == m {
			return &prev[i]
		}
	}
	return nil
}

// Work sets the work-level Applied and Available conditions from the
// manifests' conditions.
func Work(conds *[]metav1.Condition, manifests []workv1.ManifestCondition, generation int64) {
	var failed, notAvailable, unknown, conflicts []string
	for _, m := range manifests {
		if !meta.IsStatusConditionTrue(m.Conditions, workv1.ManifestApplied) {
			failed = append(failed, describe(m.ResourceMeta))
		}
		if meta.IsStatusConditionTrue(m.Conditions, ConditionConflict) {
			conflicts = append(conflicts, describe(m.ResourceMeta))
		}
		switch c := meta.FindStatusCondition(m.Conditions, workv1.ManifestAvailable); {
		case c == nil || c.Status == metav1.ConditionUnknown:
			unknown = append(unknown, describe(m.ResourceMeta))
		case c.Status == metav1.ConditionFalse:
			notAvailable = append(notAvailable, describe(m.ResourceMeta))
		}
	}
	total := len(manifests)

	applied := metav1.Condition{Type: workv1.WorkApplied, ObservedGeneration: generation}
	if len(failed) == 0 {
		applied.Status, applied.Reason, applied.Message = metav1.ConditionTrue, ReasonAppliedManifestWorkComplete, "Apply manifest work complete"
	} else {
		applied.Status, applied.Reason = metav1.ConditionFalse, ReasonAppliedManifestWorkFailed
		applied.Message = fmt.Sprintf("Failed to apply manifest work: %d of %d manifests failed: %s (see the manifests' Applied conditions)",
			len(failed), total, list(failed))
	}
	meta.SetStatusCondition(conds, applied)

	avail := metav1.Condition{Type: workv1.WorkAvailable, ObservedGeneration: generation}
	switch {
	case len(notAvailable) > 0:
		avail.Status, avail.Reason = metav1.ConditionFalse, ReasonResourcesNotAvailable
		avail.Message = fmt.Sprintf("%d of %d resources are not available: %s", len(notAvailable), total, list(notAvailable))
	case len(unknown) > 0:
		avail.Status, avail.Reason = metav1.ConditionUnknown, ReasonResourcesStatusUnknown
		avail.Message = fmt.Sprintf("%d of %d resources have unknown status: %s", len(unknown), total, list(unknown))
	default:
		avail.Status, avail.Reason, avail.Message = metav1.ConditionTrue, ReasonResourcesAvailable, "All resources are available"
	}
	meta.SetStatusCondition(conds, avail)

	if len(conflicts) == 0 {
		meta.RemoveStatusCondition(conds, ConditionConflict)
	} else {
		meta.SetStatusCondition(conds, metav1.Condition{Type: ConditionConflict, Status: metav1.ConditionTrue,
			Reason: ReasonManifestConflict, ObservedGeneration: generation,
			Message: fmt.Sprintf("%d of %d manifests are also in another ManifestWork with different content: %s (see the manifests' Conflict conditions)",
				len(conflicts), total, list(conflicts))})
	}

	// Work-level Progressing, Degraded, Complete and custom conditions, from
	// the manifests' rule conditions; those no manifest has any more go.
	aggregated := rules.Aggregate(manifests, generation)
	types := map[string]bool{}
	for _, c := range aggregated {
		meta.SetStatusCondition(conds, c)
		types[c.Type] = true
	}
	*conds = slices.DeleteFunc(*conds, func(c metav1.Condition) bool { return rules.FromRule(c) && !types[c.Type] })
}

// describe names a manifest for people: "manifest 2 (Deployment app/web)".
func describe(m workv1.ManifestResourceMeta) string {
	name := m.Name
	if m.Namespace != "" {
		name = m.Namespace + "/" + m.Name
	}
	kind := m.Kind
	if kind == "" {
		kind = "unknown kind"
	}
	if name == "" {
		return fmt.Sprintf("manifest %d (%s)", m.Ordinal, kind)
	}
	return fmt.Sprintf("manifest %d (%s %s)", m.Ordinal, kind, name)
}

// list joins at most 5 descriptions, so a huge work cannot make a huge message.
func list(items []string) string {
	if len(items) > 5 {
		return strings.Join(items[:5], ", ") + fmt.Sprintf(" and %d more", len(items)-5)
	}
	return strings.Join(items, ", ")
}
