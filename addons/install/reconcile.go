package install

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"flotilla.dev/flotilla/hub/workreplicaset"
	"flotilla.dev/flotilla/hub/workreplicaset/rollout"
)

// Reconciler carries out install strategies.
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
		Watches(&addonv1alpha1.ManagedClusterAddOn{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
		})).
		Watches(&clusterv1beta1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(r.usersOfPlacement)).
		Watches(&clusterv1beta1.Placement{}, handler.EnqueueRequestsFromMapFunc(r.usersOfPlacement)).
		Complete(r)
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

// recheck is how soon decisions that could not be used are read again.
const recheck = 5 * time.Second

// Reconcile: get, plan per placement, create and remove ManagedClusterAddOns, status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cma addonv1alpha1.ClusterManagementAddOn
	if err := r.Get(ctx, req.NamespacedName, &cma); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cma.DeletionTimestamp != nil || cma.Spec.InstallStrategy.Type != addonv1alpha1.AddonInstallStrategyPlacements {
		return ctrl.Result{}, nil
	}
	var list addonv1alpha1.ManagedClusterAddOnList
	if err := r.List(ctx, &list); err != nil {
		return ctrl.Result{}, err
	}
	existing := map[string]*addonv1alpha1.ManagedClusterAddOn{}
	for i := range list.Items {
		if list.Items[i].Name == cma.Name {
			existing[list.Items[i].Namespace] = &list.Items[i]
		}
	}
	now := r.now()
	wanted, keepAll := map[string]bool{}, false
	var errs []error
	var requeue time.Duration
	var progressions []addonv1alpha1.InstallProgression
	for _, ps := range cma.Spec.InstallStrategy.Placements {
		cond, plan, unknown, err := r.placement(ctx, &cma, ps, existing, wanted, now)
		if err != nil {
			errs = append(errs, err)
		}
		keepAll = keepAll || unknown
		if unknown {
			requeue = recheck
		}
		if plan.RequeueAfter > 0 && (requeue == 0 || plan.RequeueAfter < requeue) {
			requeue = plan.RequeueAfter
		}
		prog := addonv1alpha1.InstallProgression{PlacementRef: ps.PlacementRef}
		for _, old := range cma.Status.InstallProgressions {
			if old.PlacementRef == ps.PlacementRef {
				prog.Conditions = append([]metav1.Condition(nil), old.Conditions...)
			}
		}
		meta.SetStatusCondition(&prog.Conditions, cond)
		progressions = append(progressions, prog)
	}
	// Remove what this strategy created for clusters no placement decides on.
	if !keepAll {
		for ns, mca := range existing {
			if !wanted[ns] && metav1.IsControlledBy(mca, &cma) && mca.DeletionTimestamp == nil {
				if err := client.IgnoreNotFound(r.Delete(ctx, mca)); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if !reflect.DeepEqual(progressions, cma.Status.InstallProgressions) {
		cma.Status.InstallProgressions = progressions
		if err := r.Status().Update(ctx, &cma); err != nil && !apierrors.IsConflict(err) {
			errs = append(errs, err)
		}
	}
	return ctrl.Result{RequeueAfter: requeue}, errors.Join(errs...)
}

// placement plans one placement's rollout and creates the ManagedClusterAddOns
// whose turn has come. unknown: its decisions cannot be used now.
func (r *Reconciler) placement(ctx context.Context, cma *addonv1alpha1.ClusterManagementAddOn, ps addonv1alpha1.PlacementStrategy,
	existing map[string]*addonv1alpha1.ManagedClusterAddOn, wanted map[string]bool, now time.Time) (metav1.Condition, rollout.Plan, bool, error) {
	cond := metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionProgressing}
	set := func(s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		cond.Status, cond.Reason, cond.Message = s, reason, msg
		return cond
	}
	var p clusterv1beta1.Placement
	if err := r.Get(ctx, types.NamespacedName{Namespace: ps.Namespace, Name: ps.Name}, &p); err != nil {
		if apierrors.IsNotFound(err) {
			return set(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonFailed, fmt.Sprintf("Placement %s/%s does not exist", ps.Namespace, ps.Name)), rollout.Plan{}, true, nil
		}
		return set(metav1.ConditionUnknown, addonv1alpha1.ProgressingReasonFailed, "read the Placement: "+err.Error()), rollout.Plan{}, true, err
	}
	var decisions clusterv1beta1.PlacementDecisionList
	if err := r.List(ctx, &decisions, client.InNamespace(ps.Namespace), client.MatchingLabels{clusterv1beta1.PlacementLabel: ps.Name}); err != nil {
		return set(metav1.ConditionUnknown, addonv1alpha1.ProgressingReasonFailed, "read the decisions: "+err.Error()), rollout.Plan{}, true, err
	}
	readiness, why, own := workreplicaset.CheckDecisions(&p, decisions.Items)
	if readiness == workreplicaset.DecisionsUnknown {
		return set(metav1.ConditionTrue, addonv1alpha1.ProgressingReasonProgressing, fmt.Sprintf("Placement %s/%s %s", ps.Namespace, ps.Name, why)), rollout.Plan{}, true, nil
	}
	var clusters []rollout.Cluster
	for _, d := range own {
		idx, _ := strconv.Atoi(d.Labels[clusterv1beta1.DecisionGroupIndexLabel])
		for _, cd := range d.Status.Decisions {
			if wanted[cd.ClusterName] {
				continue
			}
			wanted[cd.ClusterName] = true
			state, since := State(existing[cd.ClusterName])
			clusters = append(clusters, rollout.Cluster{Name: cd.ClusterName, GroupIndex: int32(idx),
				GroupName: d.Labels[clusterv1beta1.DecisionGroupNameLabel], State: state, Since: since})
		}
	}
	plan, err := rollout.Compute(ps.RolloutStrategy, clusters, now)
	if err != nil {
		return set(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonFailed, fmt.Sprintf("Placement %s/%s: %v; nothing is installed until it is fixed", ps.Namespace, ps.Name, err)), plan, false, nil
	}
	var errs []error
	for _, c := range clusters {
		if c.State != rollout.ToApply || !plan.Apply[c.Name] {
			continue
		}
		mca := &addonv1alpha1.ManagedClusterAddOn{
			ObjectMeta: metav1.ObjectMeta{Name: cma.Name, Namespace: c.Name},
			Spec:       addonv1alpha1.ManagedClusterAddOnSpec{Configs: ps.Configs},
		}
		if err := controllerutil.SetControllerReference(cma, mca, r.Scheme()); err != nil {
			return cond, plan, false, err
		}
		if err := r.Create(ctx, mca); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("create ManagedClusterAddOn %s/%s: %w", c.Name, cma.Name, err))
		}
	}
	switch {
	case plan.Stopped:
		set(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonFailed, plan.Reason)
	case plan.Complete:
		set(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonCompleted, plan.Reason)
	default:
		set(metav1.ConditionTrue, addonv1alpha1.ProgressingReasonProgressing, plan.Reason)
	}
	return cond, plan, readiness == workreplicaset.DecisionsInFlux, errors.Join(errs...)
}
