package controller

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"flotilla.dev/flotilla/hub/placement/scheduling"
	"flotilla.dev/flotilla/internal/ocm"
)

// clusterHandler enqueues, for a cluster event, the placements the change may
// affect (scheduling.MayAffect): a label nobody selects on does not re-schedule
// thousands of placements.
func (r *Reconciler) clusterHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, old, new client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		r.fleet.changed() // before any pass this event starts lists the fleet
		o, _ := old.(*clusterv1.ManagedCluster)
		n, _ := new.(*clusterv1.ManagedCluster)
		setKeys, err := r.labelSetKeys(ctx)
		for _, req := range requests(r.placements(ctx), func(p *clusterv1beta1.Placement) bool {
			return err != nil || scheduling.MayAffect(p, o, n, setKeys)
		}) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, nil, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.ObjectOld, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, nil, q)
		},
	}
}

// labelSetKeys are the label keys LabelSelector cluster sets select on; a change of
// one of them may move a cluster between sets. (On an error the caller enqueues
// every placement.)
func (r *Reconciler) labelSetKeys(ctx context.Context) (map[string]bool, error) {
	var sets clusterv1beta2.ManagedClusterSetList
	if err := r.List(ctx, &sets, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for _, s := range sets.Items {
		sel := s.Spec.ClusterSelector.LabelSelector
		if s.Spec.ClusterSelector.SelectorType != clusterv1beta2.LabelSelector || sel == nil {
			continue
		}
		for k := range sel.MatchLabels {
			keys[k] = true
		}
		for _, e := range sel.MatchExpressions {
			keys[e.Key] = true
		}
	}
	return keys, nil
}

// schedulingFieldsChanged passes cluster events that can change a decision: create,
// delete, and updates of labels, claims, taints, allocatable, acceptance or deletion.
func schedulingFieldsChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*clusterv1.ManagedCluster)
		n, ok2 := e.ObjectNew.(*clusterv1.ManagedCluster)
		if !ok1 || !ok2 {
			return true
		}
		return !reflect.DeepEqual(o.Labels, n.Labels) ||
			!reflect.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
			!reflect.DeepEqual(o.Status.ClusterClaims, n.Status.ClusterClaims) ||
			!reflect.DeepEqual(o.Status.Allocatable, n.Status.Allocatable) ||
			ocm.Accepted(o) != ocm.Accepted(n) ||
			(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
	}}
}

// onlyDeletes passes delete events: someone removed a decision we own.
func onlyDeletes() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

func (r *Reconciler) placements(ctx context.Context, opts ...client.ListOption) []clusterv1beta1.Placement {
	var list clusterv1beta1.PlacementList
	if err := r.List(ctx, &list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return nil
	}
	return list.Items
}

func requests(ps []clusterv1beta1.Placement, keep func(*clusterv1beta1.Placement) bool) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(ps))
	for i := range ps {
		if keep == nil || keep(&ps[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ps[i].Namespace, Name: ps[i].Name}})
		}
	}
	return out
}

func (r *Reconciler) allPlacements(ctx context.Context, _ client.Object) []reconcile.Request {
	return requests(r.placements(ctx), nil)
}

func (r *Reconciler) placementsInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return requests(r.placements(ctx, client.InNamespace(o.GetNamespace())), nil)
}

// setChanged enqueues every placement for a cluster set's change.
func (r *Reconciler) setChanged(ctx context.Context, o client.Object) []reconcile.Request {
	r.fleet.changed()
	return r.allPlacements(ctx, o)
}

func (r *Reconciler) placementsUsingAddOnScores(ctx context.Context, _ client.Object) []reconcile.Request {
	r.fleet.changed()
	return requests(r.placements(ctx), func(p *clusterv1beta1.Placement) bool {
		for _, c := range p.Spec.PrioritizerPolicy.Configurations {
			if c.ScoreCoordinate != nil && c.ScoreCoordinate.Type == clusterv1beta1.ScoreCoordinateTypeAddOn {
				return true
			}
		}
		return false
	})
}
