package sets

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"flotilla.dev/flotilla/hub/clusterset/membership"
	"flotilla.dev/flotilla/internal/conditions"
)

// Condition reasons for ClusterSetEmpty.
const (
	ReasonNoClusterMatched = "NoClusterMatched"
	ReasonClustersSelected = "ClustersSelected"
)

// Reconciler keeps ManagedClusterSet status current.
type Reconciler struct {
	client.Client
	// recorder reports status messages that were cut to fit.
	recorder events.EventRecorder
}

// Setup registers the set controller, the default-set joiner and the built-in sets.
func Setup(mgr ctrl.Manager) error {
	r := &Reconciler{Client: mgr.GetClient(), recorder: mgr.GetEventRecorder("managedclusterset")}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return EnsureBuiltIns(ctx, mgr.GetClient())
	})); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("managedclusterset").
		For(&clusterv1beta2.ManagedClusterSet{}).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.allSets),
			builder.WithPredicates(labelsChanged())).
		Complete(r); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("defaultclusterset").
		For(&clusterv1.ManagedCluster{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			_, ok := o.GetLabels()[clusterv1beta2.ClusterSetLabel]
			return !ok
		}))).
		Complete(&joiner{Client: mgr.GetClient()})
}

// EnsureBuiltIns creates the `default` and `global` sets when they are missing.
func EnsureBuiltIns(ctx context.Context, c client.Client) error {
	for _, set := range []*clusterv1beta2.ManagedClusterSet{
		{ObjectMeta: metav1.ObjectMeta{Name: membership.DefaultSet}, Spec: clusterv1beta2.ManagedClusterSetSpec{
			ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.ExclusiveClusterSetLabel}}},
		{ObjectMeta: metav1.ObjectMeta{Name: membership.GlobalSet}, Spec: clusterv1beta2.ManagedClusterSetSpec{
			ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}},
	} {
		if err := c.Create(ctx, set); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create built-in ManagedClusterSet %q: %w", set.Name, err)
		}
	}
	return nil
}

func (r *Reconciler) allSets(ctx context.Context, _ client.Object) []reconcile.Request {
	var list clusterv1beta2.ManagedClusterSetList
	if err := r.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, s := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: s.Name}})
	}
	return out
}

// labelsChanged passes cluster creations, deletions and label changes: the only
// events that can change set membership.
func labelsChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
	}}
}

// Reconcile recomputes the set's member count and ClusterSetEmpty condition.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var set clusterv1beta2.ManagedClusterSet
	if err := r.Get(ctx, req.NamespacedName, &set); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	n, selErr, err := r.countMembers(ctx, &set)
	if err != nil {
		return ctrl.Result{}, err
	}
	cond := EmptyCondition(n, selErr)
	cond.ObservedGeneration = set.Generation
	next := set.DeepCopy()
	meta.SetStatusCondition(&next.Status.Conditions, cond)
	conditions.Fit(ctx, r.recorder, next)
	if equality.Semantic.DeepEqual(next.Status, set.Status) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.Status().Update(ctx, next)
}

// countMembers counts the clusters the set selects (selErr: the set's selector
// is invalid, which its status says; err: the cache failed). The cache filters by the
// set's selector and lends its own objects (nothing here writes them): every
// cluster change reconciles every set, and a deep copy of the whole fleet each
// time was most of the hub's allocations at 1,000 clusters.
func (r *Reconciler) countMembers(ctx context.Context, set *clusterv1beta2.ManagedClusterSet) (n int, selErr, err error) {
	sel, selErr := membership.Selector(set)
	if selErr != nil {
		return 0, selErr, nil
	}
	var clusters clusterv1.ManagedClusterList
	if err := r.List(ctx, &clusters, client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, nil, err
	}
	return len(clusters.Items), nil, nil
}

// EmptyCondition is the ClusterSetEmpty condition for a set with n members, or for a
// set whose selector is invalid.
func EmptyCondition(n int, selectorErr error) metav1.Condition {
	switch {
	case selectorErr != nil:
		return metav1.Condition{Type: clusterv1beta2.ManagedClusterSetConditionEmpty, Status: metav1.ConditionTrue,
			Reason: "InvalidClusterSelector", Message: selectorErr.Error() + "; the set selects no cluster until it is fixed"}
	case n == 0:
		return metav1.Condition{Type: clusterv1beta2.ManagedClusterSetConditionEmpty, Status: metav1.ConditionTrue,
			Reason: ReasonNoClusterMatched, Message: "No ManagedCluster selected"}
	case n == 1:
		return metav1.Condition{Type: clusterv1beta2.ManagedClusterSetConditionEmpty, Status: metav1.ConditionFalse,
			Reason: ReasonClustersSelected, Message: "1 ManagedCluster selected"}
	}
	return metav1.Condition{Type: clusterv1beta2.ManagedClusterSetConditionEmpty, Status: metav1.ConditionFalse,
		Reason: ReasonClustersSelected, Message: fmt.Sprintf("%d ManagedClusters selected", n)}
}

// joiner puts clusters without a cluster-set label into the default set.
type joiner struct{ client.Client }

func (j *joiner) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var c clusterv1.ManagedCluster
	if err := j.Get(ctx, req.NamespacedName, &c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if _, ok := c.Labels[clusterv1beta2.ClusterSetLabel]; ok || c.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(c.DeepCopy())
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	c.Labels[clusterv1beta2.ClusterSetLabel] = membership.DefaultSet
	return ctrl.Result{}, client.IgnoreNotFound(j.Patch(ctx, &c, patch))
}
