package install

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"flotilla.dev/flotilla/hub/workreplicaset/rollout"
	"flotilla.dev/flotilla/internal/placementread"
)

// Reconciler carries out install strategies and config rollouts.
type Reconciler struct {
	client.Client
	now func() time.Time
}

// Setup registers the controller with mgr.
func Setup(mgr ctrl.Manager) error {
	r := &Reconciler{Client: mgr.GetClient(), now: time.Now}
	return ctrl.NewControllerManagedBy(mgr).
		Named("addon-install").
		For(&addonv1alpha1.ClusterManagementAddOn{}).
		Watches(&addonv1alpha1.ManagedClusterAddOn{}, coalesce()).
		Watches(&clusterv1beta1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(r.usersOfPlacement)).
		Watches(&clusterv1beta1.Placement{}, handler.EnqueueRequestsFromMapFunc(r.usersOfPlacement)).
		Watches(&addonv1alpha1.AddOnDeploymentConfig{}, handler.EnqueueRequestsFromMapFunc(r.allAddons)).
		Watches(&addonv1alpha1.AddOnTemplate{}, handler.EnqueueRequestsFromMapFunc(r.allAddons)).
		Complete(r)
}

// batch is how long a ManagedClusterAddOn event waits before its addon is
// planned again: the events of a burst (an enable on 1,000 clusters, a
// rollout step) are planned once, not once each.
const batch = 200 * time.Millisecond

// coalesce enqueues an addon's ClusterManagementAddOn batch after an event of
// one of its ManagedClusterAddOns; updates that change nothing Plan reads
// (RolloutFacts) enqueue nothing.
func coalesce() handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	add := func(q queue, o client.Object) {
		q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Name: o.GetName()}}, batch)
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) { add(q, e.Object) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			if RolloutFacts(e.ObjectOld) != RolloutFacts(e.ObjectNew) {
				add(q, e.ObjectNew)
			}
		},
		DeleteFunc:  func(_ context.Context, e event.DeleteEvent, q queue) { add(q, e.Object) },
		GenericFunc: func(_ context.Context, e event.GenericEvent, q queue) { add(q, e.Object) },
	}
}

func (r *Reconciler) usersOfPlacement(ctx context.Context, o client.Object) []reconcile.Request {
	name := o.GetName()
	if _, isDecision := o.(*clusterv1beta1.PlacementDecision); isDecision {
		name = o.GetLabels()[clusterv1beta1.PlacementLabel]
	}
	var list addonv1alpha1.ClusterManagementAddOnList
	if err := r.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, c := range list.Items {
		for _, p := range c.Spec.InstallStrategy.Placements {
			if p.Name == name && p.Namespace == o.GetNamespace() {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: c.Name}})
				break
			}
		}
	}
	return out
}

// allAddons maps a config change to every ClusterManagementAddOn (a config
// may be named by defaults, placements or any ManagedClusterAddOn).
func (r *Reconciler) allAddons(ctx context.Context, _ client.Object) []reconcile.Request {
	var list addonv1alpha1.ClusterManagementAddOnList
	if err := r.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, c := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: c.Name}})
	}
	return out
}

// recheck is how soon decisions that could not be used are read again.
const recheck = 5 * time.Second

// Reconcile: get, read the snapshot (placements, addons, configs), Plan, write.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cma addonv1alpha1.ClusterManagementAddOn
	if err := r.Get(ctx, req.NamespacedName, &cma); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cma.DeletionTimestamp != nil || cma.Annotations[addonv1alpha1.AddonLifecycleAnnotationKey] == addonv1alpha1.AddonLifecycleSelfManageAnnotationValue {
		return ctrl.Result{}, nil
	}
	var list addonv1alpha1.ManagedClusterAddOnList
	// No copies of every addon on every plan: Plan and the writes below copy
	// what they change.
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	snap := Snapshot{CMA: &cma, Addons: map[string]*addonv1alpha1.ManagedClusterAddOn{}, Now: r.now(),
		Resolve: (&resolver{ctx: ctx, c: r.Client, cma: &cma, seen: map[string]resolved{}}).resolve}
	for i := range list.Items {
		if list.Items[i].Name == cma.Name {
			snap.Addons[list.Items[i].Namespace] = &list.Items[i]
		}
	}
	var errs []error
	requeue := time.Duration(0)
	if cma.Spec.InstallStrategy.Type == addonv1alpha1.AddonInstallStrategyPlacements {
		for _, ps := range cma.Spec.InstallStrategy.Placements {
			p, err := r.placement(ctx, ps)
			if err != nil {
				errs = append(errs, err)
			}
			if p.Waiting != "" || p.KeepOthers {
				requeue = recheck
			}
			snap.Placements = append(snap.Placements, p)
		}
	}

	d := Plan(snap)

	for _, cluster := range d.Create {
		mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: cma.Name, Namespace: cluster}}
		if err := controllerutil.SetControllerReference(&cma, mca, r.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, mca); err != nil {
			if !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("create ManagedClusterAddOn %s/%s: %w", cluster, cma.Name, err))
			}
			delete(d.Statuses, cluster) // the next round sees it
			continue
		}
		snap.Addons[cluster] = mca
	}
	for cluster, st := range d.Statuses {
		mca := snap.Addons[cluster]
		if mca == nil || reflect.DeepEqual(&mca.Status, st) {
			continue
		}
		upd := mca.DeepCopy()
		upd.Status = *st
		if err := r.Status().Update(ctx, upd); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("write status of ManagedClusterAddOn %s/%s: %w", cluster, cma.Name, err))
		}
	}
	for _, cluster := range d.Delete {
		if err := client.IgnoreNotFound(r.Delete(ctx, snap.Addons[cluster])); err != nil {
			errs = append(errs, err)
		}
	}
	if !reflect.DeepEqual(d.Status.DefaultConfigReferences, cma.Status.DefaultConfigReferences) ||
		!reflect.DeepEqual(d.Status.InstallProgressions, cma.Status.InstallProgressions) {
		cma.Status.DefaultConfigReferences = d.Status.DefaultConfigReferences
		cma.Status.InstallProgressions = d.Status.InstallProgressions
		if err := r.Status().Update(ctx, &cma); err != nil && !apierrors.IsConflict(err) {
			errs = append(errs, err)
		}
	}
	if d.RequeueAfter > 0 && (requeue == 0 || d.RequeueAfter < requeue) {
		requeue = d.RequeueAfter
	}
	return ctrl.Result{RequeueAfter: requeue}, errors.Join(errs...)
}

// placement reads one placement of the strategy and its decisions.
func (r *Reconciler) placement(ctx context.Context, ps addonv1alpha1.PlacementStrategy) (Placement, error) {
	out := Placement{PlacementStrategy: ps}
	d, err := placementread.Read(ctx, r.Client, ps.Namespace, ps.Name)
	if err != nil && !d.Found {
		out.Waiting = "cannot be read: " + placementread.Cause(err).Error()
		return out, placementread.Cause(err)
	}
	if !d.Found {
		out.Problem = fmt.Sprintf("Placement %s/%s does not exist", ps.Namespace, ps.Name)
		return out, nil
	}
	if err := rollout.Validate(ps.RolloutStrategy); err != nil {
		out.Problem = fmt.Sprintf("Placement %s/%s: %v; nothing new rolls out until it is fixed", ps.Namespace, ps.Name, err)
		return out, nil
	}
	if err != nil {
		out.Waiting = "decisions cannot be read: " + placementread.Cause(err).Error()
		return out, placementread.Cause(err)
	}
	if d.Readiness == placementread.Unknown {
		out.Waiting = d.Reason
		return out, nil
	}
	out.KeepOthers = d.Readiness == placementread.InFlux
	for _, c := range d.Clusters {
		out.Clusters = append(out.Clusters, rollout.Cluster{Name: c.Name, GroupIndex: c.GroupIndex, GroupName: c.GroupName})
	}
	return out, nil
}
