package work

import (
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Stage is a point a ManifestWork passes on its way to the managed cluster.
type Stage string

const (
	// StageEvent: the agent's hub informer delivered the work's create or
	// spec change.
	StageEvent Stage = "event"
	// StageStart: a worker began reconciling the work.
	StageStart Stage = "start"
	// StageApplied: every manifest was applied on the managed cluster.
	StageApplied Stage = "applied"
	// StageStatus: the work's status was written to the hub.
	StageStatus Stage = "status"
)

// Tracer is told when a work passes a stage. Calls come from the agent's
// workers and informers at once; an implementation must be safe for that and
// fast (it is on the critical path).
type Tracer interface {
	Trace(work types.NamespacedName, stage Stage)
}

// traceEvents is a predicate that lets everything through and tells tr of
// each create and update of a ManifestWork.
func traceEvents(tr Tracer) predicate.Funcs {
	key := func(w *workv1.ManifestWork) types.NamespacedName {
		return types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			if w, ok := e.Object.(*workv1.ManifestWork); ok {
				tr.Trace(key(w), StageEvent)
			}
			return true
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			if w, ok := e.ObjectNew.(*workv1.ManifestWork); ok && e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				tr.Trace(key(w), StageEvent)
			}
			return true
		},
	}
}

// trace tells r's tracer, if any, that work passed stage.
func (r *reconciler) trace(work types.NamespacedName, stage Stage) {
	if r.tracer != nil {
		r.tracer.Trace(work, stage)
	}
}
