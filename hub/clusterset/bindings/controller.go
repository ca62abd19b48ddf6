package bindings

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"flotilla.dev/flotilla/internal/conditions"
)

// Bound condition reasons.
const (
	ReasonClusterSetBound    = "ClusterSetBound"
	ReasonClusterSetNotFound = "ClusterSetNotFound"
)

// clusterSetIndex indexes bindings by spec.clusterSet.
const clusterSetIndex = "spec.clusterSet"

// Reconciler keeps the Bound condition of ManagedClusterSetBindings current.
type Reconciler struct {
	client.Client
	// recorder reports status messages that were cut to fit.
	recorder events.EventRecorder
}

// Setup registers the controller and the admission handler at WebhookPath.
func Setup(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &clusterv1beta2.ManagedClusterSetBinding{}, clusterSetIndex,
		func(o client.Object) []string {
			return []string{o.(*clusterv1beta2.ManagedClusterSetBinding).Spec.ClusterSet}
		}); err != nil {
		return err
	}
	r := &Reconciler{Client: mgr.GetClient(), recorder: mgr.GetEventRecorder("managedclustersetbinding")}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("managedclustersetbinding").
		For(&clusterv1beta2.ManagedClusterSetBinding{}).
		Watches(&clusterv1beta2.ManagedClusterSet{}, handler.EnqueueRequestsFromMapFunc(r.bindingsOf)).
		Complete(r); err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(WebhookPath, &webhook.Admission{Handler: &Validator{Client: mgr.GetClient()}})
	return nil
}

func (r *Reconciler) bindingsOf(ctx context.Context, set client.Object) []reconcile.Request {
	var list clusterv1beta2.ManagedClusterSetBindingList
	if err := r.List(ctx, &list, client.MatchingFields{clusterSetIndex: set.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, b := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
	}
	return out
}

// Reconcile sets Bound from whether the set exists.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var b clusterv1beta2.ManagedClusterSetBinding
	if err := r.Get(ctx, req.NamespacedName, &b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var set clusterv1beta2.ManagedClusterSet
	err := r.Get(ctx, types.NamespacedName{Name: b.Spec.ClusterSet}, &set)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	cond := BoundCondition(b.Spec.ClusterSet, err == nil && set.DeletionTimestamp == nil)
	cond.ObservedGeneration = b.Generation
	next := b.DeepCopy()
	meta.SetStatusCondition(&next.Status.Conditions, cond)
	conditions.Fit(ctx, r.recorder, next)
	if equality.Semantic.DeepEqual(next.Status, b.Status) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.Status().Update(ctx, next)
}

// BoundCondition is the Bound condition for a binding to set.
func BoundCondition(set string, exists bool) metav1.Condition {
	if exists {
		return metav1.Condition{Type: clusterv1beta2.ClusterSetBindingBoundType, Status: metav1.ConditionTrue,
			Reason: ReasonClusterSetBound, Message: fmt.Sprintf("Bound to ManagedClusterSet %q", set)}
	}
	return metav1.Condition{Type: clusterv1beta2.ClusterSetBindingBoundType, Status: metav1.ConditionFalse,
		Reason: ReasonClusterSetNotFound, Message: fmt.Sprintf("ManagedClusterSet %q does not exist; placements in this namespace select nothing from it until it is created", set)}
}
