package work

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Releasable decides whether the hub takes the agent's finalizer off a work
// being deleted: the hub put it there at creation (MutatingWebhooks), the
// agent never reported on the work, and no agent can have seen it: there is
// no ManagedCluster, or the cluster has not been Available since before the
// work was created. Without this a work created for a cluster that is down
// would stay Terminating until the cluster came back, where OCM deletes it at
// once. A cluster lost after the work was created may have applied it (its
// agent writes the status after the apply): the work keeps the finalizer, as
// in OCM, and so does a work its agent has reported on: what was applied for
// it is the agent's to clean up.
func Releasable(w *workv1.ManifestWork, mc *clusterv1.ManagedCluster) bool {
	if w.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(w, workv1.ManifestWorkFinalizer) || AgentReported(w) {
		return false
	}
	if mc == nil {
		return true
	}
	available := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
	if available == nil {
		return true
	}
	return available.Status != metav1.ConditionTrue && !available.LastTransitionTime.After(w.CreationTimestamp.Time)
}

// AgentReported says the work's agent wrote its status: a manifest's status,
// or an Applied condition the hub did not write (delivery.go writes its own
// when a cluster takes no deliveries).
func AgentReported(w *workv1.ManifestWork) bool {
	if len(w.Status.ResourceStatus.Manifests) > 0 {
		return true
	}
	c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	return c != nil && c.Reason != ReasonClusterDenied && c.Reason != ReasonClusterDeleting && c.Reason != ReasonAwaitingAgent
}

// releaser lets go of the works Releasable names.
type releaser struct {
	client client.Client
}

func (r *releaser) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := &workv1.ManifestWork{}
	if err := r.client.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var mc *clusterv1.ManagedCluster
	if w.DeletionTimestamp != nil {
		got := &clusterv1.ManagedCluster{}
		if err := r.client.Get(ctx, client.ObjectKey{Name: w.Namespace}, got); err == nil {
			mc = got
		} else if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
	}
	if !Releasable(w, mc) {
		return ctrl.Result{}, nil
	}
	ctrl.LoggerFrom(ctx).Info("releasing a deleted work its cluster's agent never took up: the cluster is not available")
	controllerutil.RemoveFinalizer(w, workv1.ManifestWorkFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.client.Update(ctx, w))
}

// deletingWorksOf maps a ManagedCluster event to the works being deleted in
// its namespace.
func (r *releaser) deletingWorksOf(ctx context.Context, mc *clusterv1.ManagedCluster) []reconcile.Request {
	return worksOf(ctx, r.client, mc.Name, func(w *workv1.ManifestWork) bool { return w.DeletionTimestamp != nil })
}

// deleting passes work events of works being deleted.
var deleting = predicate.NewTypedPredicateFuncs(func(w *workv1.ManifestWork) bool { return w.DeletionTimestamp != nil })

// availabilityChanged passes ManagedCluster events that change whether its
// agent may come (not its heartbeats).
var availabilityChanged = predicate.TypedFuncs[*clusterv1.ManagedCluster]{
	UpdateFunc: func(e event.TypedUpdateEvent[*clusterv1.ManagedCluster]) bool {
		available := func(mc *clusterv1.ManagedCluster) bool {
			return meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
		}
		return available(e.ObjectOld) != available(e.ObjectNew)
	},
	DeleteFunc: func(event.TypedDeleteEvent[*clusterv1.ManagedCluster]) bool { return true },
}
