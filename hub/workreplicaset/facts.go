package workreplicaset

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
	"flotilla.dev/flotilla/hub/workreplicaset/distribute"
	"flotilla.dev/flotilla/hub/workreplicaset/rollout"
	"flotilla.dev/flotilla/internal/placementread"
)

// Facts is what a reconcile reads before it decides anything: everything plan
// needs, and nothing it would have to fetch.
type Facts struct {
	// Generation is the replica set's metadata.generation (the conditions'
	// observedGeneration).
	Generation int64
	// Hash is the template revision (TemplateHash of spec.manifestWorkTemplate).
	Hash string
	// Now is the reconcile's clock reading.
	Now time.Time
	// Refs are the placementRefs, in spec order, with what was read for each.
	Refs []RefFacts
	// Works are the ManifestWorks generated for the replica set, in all
	// cluster namespaces (one per cluster).
	Works []*workv1.ManifestWork

	// Namespace and Name are the replica set's (Name is its entry in the
	// policy's status).
	Namespace, Name string
	// Template is spec.manifestWorkTemplate.
	Template workv1.ManifestWorkSpec
	// PolicyName is the DistributionPolicy the replica set names
	// (distv1alpha1.PolicyAnnotation); empty: none, the template is written as is.
	PolicyName string
	// Policy is that policy as read (nil when it does not exist), and
	// PolicyErr why it could not be read.
	Policy    *distv1alpha1.DistributionPolicy
	PolicyErr error
	// Clusters are what a render knows of each decided, accepted cluster
	// (read with its acceptance; only when a policy is named).
	Clusters map[string]distribute.Cluster
	// Renders, when set, remembers the last render of each replica set: a
	// reconcile whose render inputs did not change (most of them: every work
	// event brings one) reuses it. nil: render every time.
	Renders *RenderCache
}

// RefFacts is what was read for one placementRef.
type RefFacts struct {
	Ref workv1alpha1.LocalPlacementReference
	// Decisions and ReadErr are placementread.Read's answer.
	Decisions placementread.Decisions
	ReadErr   error
	// Accepted says, for each cluster the decisions list, whether the hub
	// accepted it (ocm.Accepted; a cluster that does not exist is not), and
	// AcceptedErr why that could not be read. Both are read only when the
	// decisions can be used (read, found, and not Unknown).
	Accepted    map[string]bool
	AcceptedErr error
}

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
