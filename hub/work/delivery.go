package work

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"flotilla.dev/flotilla/internal/conditions"
)

// Reasons of the Applied and Available conditions the hub writes on the works
// of a cluster that takes no deliveries, and after it takes them again.
const (
	// ReasonClusterDenied: the cluster's ManagedCluster has
	// spec.hubAcceptsClient=false (denied, or not accepted yet).
	ReasonClusterDenied = "ClusterDenied"
	// ReasonClusterDeleting: the cluster's ManagedCluster is being deleted.
	ReasonClusterDeleting = "ClusterDeleting"
	// ReasonAwaitingAgent: the cluster takes deliveries again; its agent has
	// not reported on the work since.
	ReasonAwaitingAgent = "AwaitingAgent"
)

// Hold says why nothing new may reach a cluster. The zero Hold (Reason "")
// means the cluster takes deliveries.
type Hold struct {
	Reason  string
	Message string
}

// HoldFor decides from the cluster's ManagedCluster (nil: there is none, so no
// agent can hold a credential for the namespace: the namespace check reports
// such works). A cluster takes no deliveries while it is being deleted or while
// spec.hubAcceptsClient is false: a denied cluster's agent may still hold a
// watch it opened before the deny (the apiserver authorises a watch once, when
// it starts), so nothing new may be written where that watch can see it.
func HoldFor(mc *clusterv1.ManagedCluster) Hold {
	switch {
	case mc == nil:
		return Hold{}
	case mc.DeletionTimestamp != nil:
		return Hold{Reason: ReasonClusterDeleting, Message: fmt.Sprintf(
			"cluster %s is being deleted: nothing new reaches it, and its works can only be deleted", mc.Name)}
	case !mc.Spec.HubAcceptsClient && meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted) != nil:
		return Hold{Reason: ReasonClusterDenied, Message: fmt.Sprintf(
			"cluster %s is denied by the hub (spec.hubAcceptsClient=false): nothing new reaches it until it is accepted again (flotilla accept --clusters %s)", mc.Name, mc.Name)}
	case !mc.Spec.HubAcceptsClient:
		return Hold{Reason: ReasonClusterDenied, Message: fmt.Sprintf(
			"cluster %s is not accepted by the hub (spec.hubAcceptsClient=false): nothing reaches it until it is accepted (flotilla accept --clusters %s)", mc.Name, mc.Name)}
	default:
		return Hold{}
	}
}

// heldConditions are the work-level conditions the hub shows for a work whose
// cluster takes no deliveries, or, with a zero hold, for a work that was held
// and waits for its agent again. It returns nil when the work's conditions need
// no change: a work that was never held keeps its agent's conditions.
func heldConditions(work *workv1.ManifestWork, hold Hold) []metav1.Condition {
	applied := meta.FindStatusCondition(work.Status.Conditions, workv1.WorkApplied)
	reason, message := hold.Reason, hold.Message
	if reason == "" {
		if applied == nil || (applied.Reason != ReasonClusterDenied && applied.Reason != ReasonClusterDeleting && applied.Reason != ReasonAwaitingAgent) {
			return nil
		}
		reason = ReasonAwaitingAgent
		message = fmt.Sprintf("cluster %s takes deliveries again; waiting for its agent to apply generation %d and report", work.Namespace, work.Generation)
	} else {
		last := "it has applied no generation of this work"
		if gen := lastApplied(work); gen > 0 {
			last = fmt.Sprintf("the last generation it applied is %d", gen)
		}
		message = fmt.Sprintf("Not delivered: %s; %s", message, last)
	}
	out := append([]metav1.Condition(nil), work.Status.Conditions...)
	for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		meta.SetStatusCondition(&out, metav1.Condition{Type: typ, Status: metav1.ConditionUnknown, Reason: reason,
			Message: message, ObservedGeneration: work.Generation})
	}
	if equality.Semantic.DeepEqual(out, work.Status.Conditions) {
		return nil
	}
	return out
}

// lastApplied is the generation the agent last applied in full, from its
// per-manifest Applied conditions (which the hub never writes); 0 when unknown.
func lastApplied(work *workv1.ManifestWork) int64 {
	manifests := work.Status.ResourceStatus.Manifests
	if len(manifests) == 0 {
		return 0
	}
	var gen int64
	for i, m := range manifests {
		c := meta.FindStatusCondition(m.Conditions, workv1.ManifestApplied)
		if c == nil || c.Status != metav1.ConditionTrue {
			return 0
		}
		if i == 0 || c.ObservedGeneration < gen {
			gen = c.ObservedGeneration
		}
	}
	return gen
}

// deliveryMarker keeps the Applied and Available conditions of the works of a
// cluster that takes no deliveries at Unknown, saying why and which generation
// the cluster last applied, so `flotilla get works` never shows a denied
// cluster's work as applied as specified. Once the cluster takes deliveries
// again, the conditions say the hub waits for the agent, whose next report
// replaces them.
type deliveryMarker struct {
	client client.Client
}

func (r *deliveryMarker) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	work := &workv1.ManifestWork{}
	if err := r.client.Get(ctx, req.NamespacedName, work); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	mc := &clusterv1.ManagedCluster{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: work.Namespace}, mc); apierrors.IsNotFound(err) {
		mc = nil
	} else if err != nil {
		return ctrl.Result{}, err
	}
	conds := heldConditions(work, HoldFor(mc))
	if conds == nil {
		return ctrl.Result{}, nil
	}
	work.Status.Conditions = conds
	conditions.Fit(ctx, nil, work) // messages naming a cluster: fitted like every other
	return ctrl.Result{}, client.IgnoreNotFound(r.client.Status().Update(ctx, work))
}

// worksOfCluster maps a ManagedCluster event to the works in its namespace.
func (r *deliveryMarker) worksOfCluster(ctx context.Context, mc *clusterv1.ManagedCluster) []reconcile.Request {
	return worksOf(ctx, r.client, mc.Name, nil)
}

// worksOf lists the works in namespace (those keep passes, all when nil) as
// requests.
func worksOf(ctx context.Context, c client.Client, namespace string, keep func(*workv1.ManifestWork) bool) []reconcile.Request {
	list := &workv1.ManifestWorkList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list the works of a cluster", "cluster", namespace)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		if keep == nil || keep(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// holdChanged passes ManagedCluster events that change whether the cluster
// takes deliveries (not its heartbeats).
var holdChanged = predicate.TypedFuncs[*clusterv1.ManagedCluster]{
	UpdateFunc: func(e event.TypedUpdateEvent[*clusterv1.ManagedCluster]) bool {
		return HoldFor(e.ObjectOld).Reason != HoldFor(e.ObjectNew).Reason
	},
}

// appliedOrSpecChanged passes work events that may need the hold shown again: a
// new work, a new generation, or an Applied condition someone else rewrote (an
// agent's last report racing the deny).
var appliedOrSpecChanged = predicate.TypedFuncs[*workv1.ManifestWork]{
	UpdateFunc: func(e event.TypedUpdateEvent[*workv1.ManifestWork]) bool {
		if e.ObjectOld.Generation != e.ObjectNew.Generation {
			return true
		}
		return !equality.Semantic.DeepEqual(meta.FindStatusCondition(e.ObjectOld.Status.Conditions, workv1.WorkApplied),
			meta.FindStatusCondition(e.ObjectNew.Status.Conditions, workv1.WorkApplied))
	},
}
