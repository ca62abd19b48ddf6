package scheduling

import "time"

// PlacementSatisfied reasons (OCM's).
const (
	ReasonAllDecisionsScheduled       = "AllDecisionsScheduled"
	ReasonNotAllDecisionsScheduled    = "NotAllDecisionsScheduled"
	ReasonNoManagedClusterSetBindings = "NoManagedClusterSetBindings"
	ReasonNoIntersection              = "NoIntersection"
	ReasonAllManagedClusterSetsEmpty  = "AllManagedClusterSetsEmpty"
	ReasonNoManagedClusterMatched     = "NoManagedClusterMatched"
)

// Decision is one selected cluster.
type Decision struct {
	ClusterName string
	// Score is the cluster's final score (sum of weight x normalised score); 0 when
	// the pass did not need scores.
	Score int64
}

// Group is one decision group: a named (or unnamed) slice of the selected clusters.
type Group struct {
	Index    int32
	Name     string
	Clusters []Decision
}

// Result is what one scheduling pass decided.
type Result struct {
	// Misconfigured is set when the Placement cannot be evaluated as written; it says
	// what is wrong and where. Nothing else in the Result is meaningful then.
	Misconfigured error
	// Decisions are the selected clusters in output order (spec.sortBy).
	Decisions []Decision
	// Groups divide Decisions per spec.decisionStrategy; always at least one.
	Groups []Group
	// Satisfied, Reason and Message make the PlacementSatisfied condition.
	Satisfied bool
	Reason    string
	Message   string
	// RequeueAfter > 0 asks for another pass then (a toleration or score expires).
	RequeueAfter time.Duration
}

func (r *Result) requeue(d time.Duration) {
	if d > 0 && (r.RequeueAfter == 0 || d < r.RequeueAfter) {
		r.RequeueAfter = d
	}
}
