package workreplicaset

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
	"flotilla.dev/flotilla/hub/workreplicaset/rollout"
	"flotilla.dev/flotilla/internal/placementread"
)

// Plan is what one reconcile does, decided by plan from the Facts alone: the
// writes (Apply, Delete), the status and when to look again.
type Plan struct {
	// Apply are the works to create or update, in placementRef then decision
	// order; each carries what render needs to build it.
	Apply []Apply
	// Delete are the works of clusters no placementRef decides any more (and
	// whose own ref can be trusted), not already being deleted.
	Delete []*workv1.ManifestWork
	// Keep are the works that stay: of a cluster some ref decides (or holds),
	// or of a ref whose decisions cannot be used right now. Some of them are
	// rewritten by Apply; the summary counts them as read.
	Keep []*workv1.ManifestWork
	// Refs is what each placementRef came to, in spec order: the inputs of
	// the conditions, and what the reconcile logs.
	Refs []refOutcome
	// PlacementsSummary, Summary and Conditions are the status (the
	// conditions before they are merged into the current ones).
	PlacementsSummary []workv1alpha1.PlacementSummary
	Summary           workv1alpha1.ManifestWorkReplicaSetSummary
	Conditions        []metav1.Condition
	// RequeueAfter > 0: look again then (the soonest any ref asks for).
	RequeueAfter time.Duration
	// PolicyStatus is the replica set's entry in its DistributionPolicy's
	// status; nil when it names none, or the policy cannot be read.
	PolicyStatus *distv1alpha1.ReplicaSetStatus
	// named: the replica set names a DistributionPolicy (it owns
	// ConditionDistributionPolicyApplied; otherwise the condition is removed).
	named bool
}

// Apply is one cluster's work to create (Existing nil) or update: with the
// replica set, everything render needs to build it.
type Apply struct {
	// Cluster is the managed cluster, and the namespace of its work.
	Cluster string
	// Placement is the placementRef that decides the cluster (the
	// placementname label).
	Placement string
	// Existing is the cluster's work as read; nil when it has none.
	Existing *workv1.ManifestWork
	// Hash is the revision the work gets (TemplateHashAnnotation): the
	// TemplateHash of its spec.
	Hash string
	// Spec is the cluster's rendered spec under the replica set's
	// DistributionPolicy; nil: the template as is.
	Spec *workv1.ManifestWorkSpec
	// Started is when it gets it (RolloutStartedAnnotation).
	Started time.Time
}

// How soon a replica set looks again at a placementRef whose decisions are being
// rewritten, or cannot be used at all (watches usually come first).
const (
	recheckInFlux  = time.Second
	recheckUnknown = 30 * time.Second
)

// plan decides a reconcile from its facts. It is pure.
//
// For each placementRef in spec order: a ref whose decisions cannot be used
// (Placement missing or unreadable, not scheduled for its spec, acceptance
// unreadable: unknown) or are being rewritten (in flux) keeps every work that
// belongs to it and asks to be looked at again (recheckUnknown, or at most
// recheckInFlux). Otherwise, and also in flux, its decided clusters are split
// (SplitDecisions: a cluster an earlier ref decides is left to that ref; one
// the hub has not accepted is held, no work written, its work kept) and
// rolled out (rollout.Compute: the clusters it says Apply, whose work is not
// at the current revision, get one). Then every work of a cluster no ref
// decides, holds or keeps is deleted.
func plan(f Facts) Plan {
	p := Plan{PlacementsSummary: []workv1alpha1.PlacementSummary{}}
	dist := distributeWorks(f)
	p.named = dist.named
	hashOf := func(cluster string) string { return dist.hashOf(cluster, f.Hash) }
	byCluster := map[string]*workv1.ManifestWork{}
	for _, w := range f.Works {
		byCluster[w.Namespace] = w
	}
	wanted := map[string]bool{} // clusters some ref decides or holds
	keep := map[string]bool{}   // works of refs whose decisions cannot be trusted right now
	desiredTotal := 0
	for _, rf := range f.Refs {
		out, apply := planRef(rf, dist, f.Hash, f.Now, byCluster, wanted)
		p.Apply = append(p.Apply, apply...)
		if out.unknown != "" || out.inFlux {
			// Never delete on a missing or half-written answer: keep this ref's works
			// and look again soon (the Placement and decision watches also bring us back).
			for _, w := range f.Works {
				if belongsTo(w, out.name) {
					keep[w.Namespace] = true
					out.kept++
				}
			}
			if out.inFlux {
				if out.requeue == 0 || out.requeue > recheckInFlux {
					out.requeue = recheckInFlux
				}
			} else {
				out.requeue = recheckUnknown
			}
		}
		if out.requeue > 0 && (p.RequeueAfter == 0 || out.requeue < p.RequeueAfter) {
			p.RequeueAfter = out.requeue
		}
		desiredTotal += out.decided
		p.PlacementsSummary = append(p.PlacementsSummary, workv1alpha1.PlacementSummary{
			Name:                    out.name,
			AvailableDecisionGroups: availableGroups(out),
			Summary:                 Summarize(refWorks(out, f.Works, byCluster), hashOf, out.decided),
		})
		p.Refs = append(p.Refs, out)
	}
	// Works of clusters no placement decides any more go; works of refs whose
	// decisions cannot be read stay.
	for _, w := range f.Works {
		switch {
		case wanted[w.Namespace] || keep[w.Namespace]:
			p.Keep = append(p.Keep, w)
		case w.DeletionTimestamp == nil:
			p.Delete = append(p.Delete, w)
		}
	}
	p.Summary = Summarize(p.Keep, hashOf, desiredTotal)
	p.Conditions = conditions(f.Generation, p.Refs)
	if dist.named {
		p.Conditions = append(p.Conditions, dist.condition(f.Generation, f.PolicyName, p.Keep))
		if f.Policy != nil {
			st := dist.replicaSetStatus(f.Name, p.Keep)
			p.PolicyStatus = &st
		}
	}
	return p
}

// refOutcome is what planning one placementRef came to.
type refOutcome struct {
	name  string
	found bool // the Placement exists
	// unknown, when set, says why the placement's decisions cannot be used (missing
	// Placement, read error, not scheduled yet, acceptance unreadable): the ref
	// rolls nothing out and its works are kept as they are.
	unknown string
	// inFlux: decisions are being rewritten; rolled out as listed, nothing deleted.
	inFlux     bool
	kept       int      // works kept because the decisions could not be trusted
	unrendered int      // decided clusters whose render failed: their works are left as they are
	held       []string // decided clusters the hub has not accepted: no work written
	decided    int
	plan       rollout.Plan
	planErr    error
	failed     int
	notYet     int // decided clusters whose work is not applied with the current revision
	groups     map[int32][]string
	available  map[string]bool
	requeue    time.Duration // > 0: look at this ref again then
}

// planRef plans one placementRef: its outcome and the works it writes.
// covered collects the clusters that keep a work (SplitDecisions).
func planRef(rf RefFacts, dist distribution, template string, now time.Time, byCluster map[string]*workv1.ManifestWork, covered map[string]bool) (refOutcome, []Apply) {
	d := rf.Decisions
	out := refOutcome{name: rf.Ref.Name, found: d.Found, groups: map[int32][]string{}, available: map[string]bool{}}
	switch {
	case rf.ReadErr != nil && !d.Found:
		out.unknown = "could not be read: " + placementread.Cause(rf.ReadErr).Error()
	case rf.ReadErr != nil:
		out.unknown = "has decisions that could not be read: " + placementread.Cause(rf.ReadErr).Error()
	case !d.Found:
		out.unknown = "not found in this namespace"
	case d.Readiness == placementread.Unknown:
		out.unknown = d.Reason
	}
	if out.unknown != "" {
		return out, nil
	}
	out.inFlux = d.Readiness == placementread.InFlux
	if rf.AcceptedErr != nil {
		out.unknown = "decides clusters whose acceptance could not be read: " + rf.AcceptedErr.Error()
		return out, nil
	}
	decided, held := SplitDecisions(d.Own, covered, rf.Accepted)
	out.held = held
	var clusters []rollout.Cluster
	for _, dc := range decided {
		hash := dist.hashOf(dc.Name, template)
		if dist.failed[dc.Name] != nil {
			// Its render failed: its work stays as it is (counted as current so the
			// rollout is not held up by it), and none is written.
			out.unrendered++
			hash = ""
			if w := byCluster[dc.Name]; w != nil {
				hash = w.Annotations[TemplateHashAnnotation]
			}
		}
		state, since := WorkState(byCluster[dc.Name], hash)
		clusters = append(clusters, rollout.Cluster{Name: dc.Name, GroupIndex: dc.GroupIndex, GroupName: dc.GroupName, State: state, Since: since})
		out.groups[dc.GroupIndex] = append(out.groups[dc.GroupIndex], dc.Name)
		out.available[dc.Name] = byCluster[dc.Name] != nil &&
			meta.IsStatusConditionTrue(byCluster[dc.Name].Status.Conditions, workv1.WorkAvailable)
	}
	out.decided = len(clusters)
	rp, err := rollout.Compute(rf.Ref.RolloutStrategy, clusters, now)
	if err != nil {
		out.planErr = err
		return out, nil
	}
	out.plan, out.requeue = rp, rp.RequeueAfter
	timedOut := map[string]bool{}
	for _, n := range rp.TimedOut {
		timedOut[n] = true
	}
	var apply []Apply
	for _, c := range clusters {
		switch {
		case c.State == rollout.Failed || timedOut[c.Name]:
			out.failed++
		case c.State != rollout.Succeeded:
			out.notYet++
		}
		if c.State != rollout.ToApply || !rp.Apply[c.Name] || dist.failed[c.Name] != nil || dist.hold {
			continue
		}
		a := Apply{Cluster: c.Name, Placement: rf.Ref.Name, Existing: byCluster[c.Name], Hash: dist.hashOf(c.Name, template), Started: now}
		if dist.named {
			spec := dist.out.Works[c.Name].Spec
			a.Spec = &spec
		}
		apply = append(apply, a)
	}
	return out, apply
}

// belongsTo says whether w was written for the placementRef named placement
// (its placementname label).
func belongsTo(w *workv1.ManifestWork, placement string) bool {
	return w.Labels[workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey] == placement
}

// refWorks are the works a ref's summary counts: those of its decided
// clusters that belong to it and, while its decisions cannot be used, every
// work it keeps.
func refWorks(out refOutcome, works []*workv1.ManifestWork, byCluster map[string]*workv1.ManifestWork) []*workv1.ManifestWork {
	var ws []*workv1.ManifestWork
	counted := map[string]bool{}
	for _, names := range out.groups {
		for _, c := range names {
			if w := byCluster[c]; w != nil && belongsTo(w, out.name) {
				ws = append(ws, w)
				counted[c] = true
			}
		}
	}
	if out.unknown != "" || out.inFlux {
		for _, w := range works {
			if !counted[w.Namespace] && belongsTo(w, out.name) {
				ws = append(ws, w)
			}
		}
	}
	return ws
}

// availableGroups is "<groups whose works are all available>/<groups>".
func availableGroups(o refOutcome) string {
	ok := 0
	for _, names := range o.groups {
		all := true
		for _, n := range names {
			all = all && o.available[n]
		}
		if all {
			ok++
		}
	}
	return fmt.Sprintf("%d/%d", ok, len(o.groups))
}

// status is the replica set's next status: the plan's summaries, and its
// conditions merged into a copy of current (meta.SetStatusCondition keeps a
// condition's lastTransitionTime while its status holds). current is not
// changed: merged in place, a change to the conditions alone would compare
// equal to the status read and never be written.
func (p Plan) status(current []metav1.Condition) workv1alpha1.ManifestWorkReplicaSetStatus {
	st := workv1alpha1.ManifestWorkReplicaSetStatus{PlacementsSummary: p.PlacementsSummary, Summary: p.Summary,
		Conditions: append([]metav1.Condition(nil), current...)}
	for _, c := range p.Conditions {
		meta.SetStatusCondition(&st.Conditions, c)
	}
	if !p.named {
		meta.RemoveStatusCondition(&st.Conditions, ConditionDistributionPolicyApplied)
	}
	return st
}

// Summarize counts works by condition. desired is the number of decided
// clusters; hashOf is the revision each cluster's work should carry.
func Summarize(works []*workv1.ManifestWork, hashOf func(cluster string) string, desired int) workv1alpha1.ManifestWorkReplicaSetSummary {
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
		if w.Annotations[TemplateHashAnnotation] == hashOf(w.Namespace) {
			s.Updated++
		}
	}
	return s
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
