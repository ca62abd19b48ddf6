package workreplicaset

import (
	"context"
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
	"flotilla.dev/flotilla/internal/ocm"
)

// Options configures the ManifestWorkReplicaSet controller. Every field documents its default.
type Options struct {
	// Workers is how many replica sets are reconciled concurrently. Default 2.
	Workers int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Reconciler fans ManifestWorkReplicaSets out to decided clusters.
type Reconciler struct {
	client.Client
	now func() time.Time
	// recorder reports status messages that were cut to fit.
	recorder events.EventRecorder
	// renders remembers each replica set's last render (nil: none).
	renders *RenderCache
}

// Setup registers the controller with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Reconciler{Client: mgr.GetClient(), now: opts.Now, recorder: mgr.GetEventRecorder("manifestworkreplicaset"), renders: NewRenderCache()}
	return ctrl.NewControllerManagedBy(mgr).
		Named("manifestworkreplicaset").
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Workers}).
		For(&workv1alpha1.ManifestWorkReplicaSet{}).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(ownerOfWork)).
		Watches(&clusterv1beta1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(r.usersOfPlacement)).
		Watches(&clusterv1beta1.Placement{}, handler.EnqueueRequestsFromMapFunc(r.usersOfPlacement)).
		// A decided cluster the hub accepts gets its work even when no decision changes.
		// ... and a re-render when what overrides and divisions read of it changes.
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.decidingOn), builder.WithPredicates(acceptanceOrRenderInputChanged)).
		Watches(&distv1alpha1.DistributionPolicy{}, handler.EnqueueRequestsFromMapFunc(r.usersOfPolicy), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// acceptanceOrRenderInputChanged passes ManagedCluster updates that change
// whether the hub accepted the cluster (ocm.Accepted), or what a render
// reads of it (labels, ClusterClaims, allocatable resources: ClusterFacts).
var acceptanceOrRenderInputChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		if ocm.AcceptanceChanged(e.ObjectOld, e.ObjectNew) {
			return true
		}
		old, ok1 := e.ObjectOld.(*clusterv1.ManagedCluster)
		cur, ok2 := e.ObjectNew.(*clusterv1.ManagedCluster)
		return ok1 && ok2 && !reflect.DeepEqual(ClusterFacts(old), ClusterFacts(cur))
	},
}

// usersOfPolicy maps a DistributionPolicy to the replica sets of its
// namespace that name it (distv1alpha1.PolicyAnnotation).
func (r *Reconciler) usersOfPolicy(ctx context.Context, o client.Object) []reconcile.Request {
	var list workv1alpha1.ManifestWorkReplicaSetList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, m := range list.Items {
		if m.Annotations[distv1alpha1.PolicyAnnotation] == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.Namespace, Name: m.Name}})
		}
	}
	return out
}

// decidingOn maps a ManagedCluster to the replica sets whose placements decide it.
func (r *Reconciler) decidingOn(ctx context.Context, o client.Object) []reconcile.Request {
	var list clusterv1beta1.PlacementDecisionList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		d := &list.Items[i]
		for _, cd := range d.Status.Decisions {
			if cd.ClusterName == o.GetName() {
				out = append(out, r.usersOfPlacement(ctx, d)...)
				break
			}
		}
	}
	return out
}

// ownerOfWork maps a generated work back to its replica set via the label.
func ownerOfWork(_ context.Context, o client.Object) []reconcile.Request {
	v, ok := o.GetLabels()[workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey]
	if !ok {
		return nil
	}
	ns, name, ok := strings.Cut(v, ".")
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// usersOfPlacement maps a Placement or PlacementDecision to the replica sets in its
// namespace that reference the placement.
func (r *Reconciler) usersOfPlacement(ctx context.Context, o client.Object) []reconcile.Request {
	placement := o.GetName()
	if _, isDecision := o.(*clusterv1beta1.PlacementDecision); isDecision {
		placement = o.GetLabels()[clusterv1beta1.PlacementLabel]
	}
	var list workv1alpha1.ManifestWorkReplicaSetList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, m := range list.Items {
		for _, ref := range m.Spec.PlacementRefs {
			if ref.Name == placement {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.Namespace, Name: m.Name}})
				break
			}
		}
	}
	return out
}
