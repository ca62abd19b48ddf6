package deploy

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/internal/ocm"
)

// Options configures the controller. Every field documents its default.
type Options struct {
	// Registry holds the addons this hub installs. Required.
	Registry *framework.Registry
	// ManifestLimit is the most manifest bytes one ManifestWork holds. Default 500 KiB.
	ManifestLimit int
	// Workers is how many ManagedClusterAddOns are reconciled at once. Default 4.
	Workers int
}

// Reconciler installs registered addons on the clusters whose
// ManagedClusterAddOn asks for them.
type Reconciler struct {
	client.Client
	// reader reads without a cache: rights are checked against what the apiserver holds.
	reader   client.Reader
	registry *framework.Registry
	limit    int
}

// Setup registers the controller with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.ManifestLimit <= 0 {
		opts.ManifestLimit = 500 * 1024
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	r := &Reconciler{Client: mgr.GetClient(), reader: mgr.GetAPIReader(), registry: opts.Registry, limit: opts.ManifestLimit}
	return ctrl.NewControllerManagedBy(mgr).
		Named("addon-deploy").
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Workers}).
		For(&addonv1alpha1.ManagedClusterAddOn{}).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(addonOfWork)).
		Watches(&addonv1alpha1.ClusterManagementAddOn{}, handler.EnqueueRequestsFromMapFunc(r.instancesOf)).
		Watches(&addonv1alpha1.AddOnDeploymentConfig{}, handler.EnqueueRequestsFromMapFunc(r.all)).
		Watches(&addonv1alpha1.AddOnTemplate{}, handler.EnqueueRequestsFromMapFunc(r.ofTemplate)).
		Complete(r)
}

// addonOfWork maps an addon's work to its ManagedClusterAddOn.
func addonOfWork(_ context.Context, o client.Object) []reconcile.Request {
	name, ok := o.GetLabels()[ocm.AddonNameLabel]
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// instancesOf maps a ClusterManagementAddOn to its ManagedClusterAddOns.
func (r *Reconciler) instancesOf(ctx context.Context, o client.Object) []reconcile.Request {
	return r.matching(ctx, func(name string) bool { return name == o.GetName() })
}

// all maps a config change to every ManagedClusterAddOn.
func (r *Reconciler) all(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.matching(ctx, func(string) bool { return true })
}

// ofTemplate maps an AddOnTemplate to the ManagedClusterAddOns of its addon.
func (r *Reconciler) ofTemplate(ctx context.Context, o client.Object) []reconcile.Request {
	t, ok := o.(*addonv1alpha1.AddOnTemplate)
	if !ok {
		return nil
	}
	return r.matching(ctx, func(name string) bool { return name == t.Spec.AddonName })
}

func (r *Reconciler) matching(ctx context.Context, keep func(string) bool) []reconcile.Request {
	var list addonv1alpha1.ManagedClusterAddOnList
	if err := r.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, m := range list.Items {
		if keep(m.Name) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.Namespace, Name: m.Name}})
		}
	}
	return out
}

// hookRecheck is how often a deletion waiting on its pre-delete hook looks again
// (work status events usually come first).
const hookRecheck = 10 * time.Second
