package controller

import (
	"context"
	"time"

	"k8s.io/client-go/tools/events"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"flotilla.dev/flotilla/hub/placement/scheduling"
)

// Options configures the placement controller. Every field documents its default.
type Options struct {
	// Workers is how many Placements are scheduled concurrently. Default 8 (the work
	// is mostly waiting for the apiserver).
	Workers int
	// Registry holds the scheduling plugins. Default scheduling.DefaultRegistry().
	Registry *scheduling.Registry
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Reconciler schedules Placements and writes their decisions and status.
type Reconciler struct {
	client.Client
	registry *scheduling.Registry
	now      func() time.Time
	infos    *infoCache
	fleet    *fleet
	counts   *countCache
	// recorder reports status messages that were cut to fit.
	recorder events.EventRecorder
	// scores remembers score writes (spec.scoreRateLimit).
	scores *scoreWrites
	// statuses remembers status writes, to tell a stale cache.
	statuses *statusWrites
}

// Setup registers the controller with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	if opts.Registry == nil {
		opts.Registry = scheduling.DefaultRegistry()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Reconciler{Client: mgr.GetClient(), registry: opts.Registry, now: opts.Now, infos: newInfoCache(), fleet: &fleet{}, counts: &countCache{},
		recorder: mgr.GetEventRecorder("placement"), scores: &scoreWrites{}, statuses: &statusWrites{}}
	ctx := context.Background()
	if err := r.fleet.watch(ctx, mgr.GetCache()); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &clusterv1beta1.PlacementDecision{}, decisionsOfPlacement, placementOfDecision); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("placement").
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Workers}).
		For(&clusterv1beta1.Placement{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&clusterv1beta1.PlacementDecision{}, builder.WithPredicates(onlyDeletes())).
		Watches(&clusterv1.ManagedCluster{}, r.clusterHandler(), builder.WithPredicates(schedulingFieldsChanged())).
		Watches(&clusterv1beta2.ManagedClusterSet{}, handler.EnqueueRequestsFromMapFunc(r.setChanged),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&clusterv1beta2.ManagedClusterSetBinding{}, handler.EnqueueRequestsFromMapFunc(r.placementsInNamespace)).
		Watches(&clusterv1alpha1.AddOnPlacementScore{}, handler.EnqueueRequestsFromMapFunc(r.placementsUsingAddOnScores)).
		Complete(r)
}
