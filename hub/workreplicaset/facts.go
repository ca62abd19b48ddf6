package workreplicaset

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"

	"flotilla.dev/flotilla/hub/workreplicaset/rollout"
	"flotilla.dev/flotilla/internal/placementread"
)

// Annotations Flotilla keeps on generated works.
const (
	// TemplateHashAnnotation identifies the template revision a work carries.
	TemplateHashAnnotation = "work.flotilla.dev/template-hash"
	// RolloutStartedAnnotation is when the work got that revision (RFC 3339); the
	// progress deadline counts from it.
	RolloutStartedAnnotation = "work.flotilla.dev/rollout-started"
)

// TemplateHash is a short digest of the template: equal templates, equal hashes.
func TemplateHash(spec workv1.ManifestWorkSpec) string {
	raw, _ := json.Marshal(spec)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

// WorkState says where a cluster's work stands with the template revision hash.
// A work that is missing or carries another revision is ToApply; one whose Applied
// condition is False, or that is Degraded, has Failed; one Applied and Available
// has Succeeded (since it became available); anything else is Progressing (since
// it got the revision).
func WorkState(w *workv1.ManifestWork, hash string) (rollout.State, time.Time) {
	if w == nil || w.Annotations[TemplateHashAnnotation] != hash {
		return rollout.ToApply, time.Time{}
	}
	started := w.CreationTimestamp.Time
	if v, err := time.Parse(time.RFC3339, w.Annotations[RolloutStartedAnnotation]); err == nil {
		started = v
	}
	current := func(t string) *metav1.Condition {
		c := meta.FindStatusCondition(w.Status.Conditions, t)
		if c == nil || (c.ObservedGeneration != 0 && c.ObservedGeneration != w.Generation) {
			return nil
		}
		return c
	}
	if c := current(workv1.WorkApplied); c != nil && c.Status == metav1.ConditionFalse {
		return rollout.Failed, c.LastTransitionTime.Time
	}
	if c := current(workv1.WorkDegraded); c != nil && c.Status == metav1.ConditionTrue {
		return rollout.Failed, c.LastTransitionTime.Time
	}
	applied, available := current(workv1.WorkApplied), current(workv1.WorkAvailable)
	if applied != nil && applied.Status == metav1.ConditionTrue && available != nil && available.Status == metav1.ConditionTrue {
		return rollout.Succeeded, available.LastTransitionTime.Time
	}
	return rollout.Progressing, started
}

// Summarize counts works by condition. desired is the number of decided clusters.
func Summarize(works []*workv1.ManifestWork, hash string, desired int) workv1alpha1.ManifestWorkReplicaSetSummary {
	s := workv1alpha1.ManifestWorkReplicaSetSummary{Total: len(works), DesiredTotal: desired}
	for _, w := range works {
		if meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied) {
			s.Applied++
		}
		if meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkAvailable) {
			s.Available++
		}
		if meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkDegraded) {
			s.Degraded++
		}
		if meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkProgressing) {
			s.Progressing++
		}
		if w.Annotations[TemplateHashAnnotation] == hash {
			s.Updated++
		}
	}
	return s
}

// refOutcome is what reconciling one placementRef found.
type refOutcome struct {
	name  string
	found bool // the Placement exists
	// unknown, when set, says why the placement's decisions cannot be used (missing
	// Placement, read error, not scheduled yet): the ref is skipped and its works
	// are kept as they are.
	unknown string
	// inFlux: decisions are being rewritten; rolled out as listed, nothing deleted.
	inFlux    bool
	kept      int // works kept because the decisions could not be trusted
	decided   int
	plan      rollout.Plan
	planErr   error
	failed    int
	notYet    int // decided clusters whose work is not applied with the current revision
	groups    map[int32][]string
	available map[string]bool
}

// conditions computes the three OCM conditions from the outcomes of all refs.
func conditions(gen int64, outs []refOutcome) []metav1.Condition {
	verified := metav1.Condition{Type: workv1alpha1.ManifestWorkReplicaSetConditionPlacementVerified, Status: metav1.ConditionTrue,
		Reason: workv1alpha1.ReasonAsExpected, Message: "Every placement has decisions"}
	rolled := metav1.Condition{Type: workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, Status: metav1.ConditionTrue,
		Reason: workv1alpha1.ReasonComplete, Message: "Rollout complete on every placement"}
	applied := metav1.Condition{Type: workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied, Status: metav1.ConditionTrue,
		Reason: workv1alpha1.ReasonAsExpected, Message: "A ManifestWork with the current template is applied on every decided cluster"}
	if len(outs) == 0 {
		verified.Status, verified.Reason, verified.Message = metav1.ConditionFalse, workv1alpha1.ReasonPlacementDecisionNotFound, "spec.placementRefs is empty"
	}
	for _, o := range outs {
		if o.unknown != "" {
			if verified.Reason != workv1alpha1.ReasonPlacementDecisionNotFound {
				verified.Status, verified.Reason = metav1.ConditionFalse, workv1alpha1.ReasonPlacementDecisionNotFound
				verified.Message = fmt.Sprintf("Placement %q %s; its %d ManifestWorks are kept as they are until its decisions can be read or it is removed from spec.placementRefs",
					o.name, o.unknown, o.kept)
			}
			if rolled.Status == metav1.ConditionTrue {
				rolled.Status, rolled.Reason = metav1.ConditionFalse, workv1alpha1.ReasonProgressing
				rolled.Message = fmt.Sprintf("Placement %q: waiting for its decisions", o.name)
			}
			continue
		}
		switch {
		case o.decided == 0 && !o.inFlux && verified.Status == metav1.ConditionTrue:
			verified.Status, verified.Reason = metav1.ConditionFalse, workv1alpha1.ReasonPlacementDecisionEmpty
			verified.Message = fmt.Sprintf("Placement %q selects no cluster", o.name)
		}
		switch {
		case o.planErr != nil:
			rolled.Status, rolled.Reason, rolled.Message = metav1.ConditionFalse, workv1alpha1.ReasonProgressing,
				fmt.Sprintf("placementRefs %q: %v; nothing is rolled out until it is fixed", o.name, o.planErr)
		case o.found && !o.plan.Complete && rolled.Status == metav1.ConditionTrue:
			rolled.Status, rolled.Reason = metav1.ConditionFalse, workv1alpha1.ReasonProgressing
			rolled.Message = fmt.Sprintf("Placement %q: %s", o.name, o.plan.Reason)
		}
		switch {
		case o.failed > 0:
			applied.Status, applied.Reason = metav1.ConditionFalse, workv1alpha1.ReasonNotAsExpected
			applied.Message = fmt.Sprintf("Placement %q: %d ManifestWorks failed or timed out", o.name, o.failed)
		case o.notYet > 0 && applied.Reason != workv1alpha1.ReasonNotAsExpected:
			applied.Status, applied.Reason = metav1.ConditionFalse, workv1alpha1.ReasonProcessing
			applied.Message = fmt.Sprintf("Placement %q: %d of %d clusters do not run the current template yet", o.name, o.notYet, o.decided)
		}
	}
	out := []metav1.Condition{verified, rolled, applied}
	for i := range out {
		out[i].ObservedGeneration = gen
	}
	return out
}

// Decided is one cluster a placementRef rolls out to, with its decision group.
type Decided = placementread.Cluster

// SplitDecisions lists, in decision order, the clusters a placementRef rolls
// out to from the placement's own decisions. covered holds the clusters an
// earlier ref already covers; it gains every cluster decided here, so that
// their works are kept. A cluster the hub has not accepted (accepted[c] false
// or absent: a pending join, a denied cluster, one that is gone) is held: it
// is covered, so a work it has is left as it is until the placement drops it,
// but it gets no work written.
func SplitDecisions(own []clusterv1beta1.PlacementDecision, covered, accepted map[string]bool) (decided []Decided, held []string) {
	for _, c := range placementread.Clusters(own) {
		if covered[c.Name] {
			continue // another placementRef already covers this cluster
		}
		covered[c.Name] = true
		if !accepted[c.Name] {
			held = append(held, c.Name)
			continue
		}
		decided = append(decided, c)
	}
	return decided, held
}
