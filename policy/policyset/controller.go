package policyset

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
)

// Options configures the controller. It has no settings yet.
type Options struct{}

// Reconciler writes PolicySet status.
type Reconciler struct {
	client.Client
}

// Setup registers the controller with mgr.
func Setup(mgr ctrl.Manager, _ Options) error {
	r := &Reconciler{Client: mgr.GetClient()}
	return ctrl.NewControllerManagedBy(mgr).
		Named("policyset-status").
		For(&policyv1beta1.PolicySet{}).
		Watches(&policyv1.Policy{}, handler.EnqueueRequestsFromMapFunc(r.setsListing)).
		Watches(&policyv1.PlacementBinding{}, handler.EnqueueRequestsFromMapFunc(setsBound)).
		Complete(r)
}

// Reconcile: get, read the members and bindings, write the status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var set policyv1beta1.PolicySet
	if err := r.Get(ctx, req.NamespacedName, &set); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	members := map[string]*policyv1.Policy{}
	for _, name := range set.Spec.Policies {
		var p policyv1.Policy
		err := r.Get(ctx, client.ObjectKey{Namespace: set.Namespace, Name: string(name)}, &p)
		switch {
		case err == nil:
			members[string(name)] = &p
		case !apierrors.IsNotFound(err):
			return ctrl.Result{}, err
		}
	}
	var bindings policyv1.PlacementBindingList
	if err := r.List(ctx, &bindings, client.InNamespace(set.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	st := Status(&set, members, bindings.Items)
	if equality.Semantic.DeepEqual(st, set.Status) {
		return ctrl.Result{}, nil
	}
	set.Status = st
	if err := r.Status().Update(ctx, &set); err != nil && !apierrors.IsConflict(err) {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// setsListing maps a root Policy to the sets of its namespace that list it.
func (r *Reconciler) setsListing(ctx context.Context, o client.Object) []reconcile.Request {
	if _, replica := o.GetLabels()[policyv1.RootPolicyLabel]; replica {
		return nil
	}
	var sets policyv1beta1.PolicySetList
	if err := r.List(ctx, &sets, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, s := range sets.Items {
		for _, p := range s.Spec.Policies {
			if string(p) == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
				break
			}
		}
	}
	return out
}

// setsBound maps a PlacementBinding to the sets among its subjects.
func setsBound(_ context.Context, o client.Object) []reconcile.Request {
	b, ok := o.(*policyv1.PlacementBinding)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	for _, s := range b.Subjects {
		if s.Kind == "PolicySet" {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: b.Namespace, Name: s.Name}})
		}
	}
	return out
}
