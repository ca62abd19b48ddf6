package controller

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// schedulingFieldsChanged passes cluster events that can change a decision: create,
// delete, and updates of labels, claims, taints, allocatable or deletion.
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

func (r *Reconciler) placementsUsingAddOnScores(ctx context.Context, _ client.Object) []reconcile.Request {
	return requests(r.placements(ctx), func(p *clusterv1beta1.Placement) bool {
		for _, c := range p.Spec.PrioritizerPolicy.Configurations {
			if c.ScoreCoordinate != nil && c.ScoreCoordinate.Type == clusterv1beta1.ScoreCoordinateTypeAddOn {
				return true
			}
		}
		return false
	})
}
