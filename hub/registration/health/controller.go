package health

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"flotilla.dev/flotilla/internal/conditions"
)

// conflictRetry is the pause before re-reading an object another writer changed.
const conflictRetry = 20 * time.Millisecond

// Reconciler marks clusters whose lease stopped Unknown and keeps their taints.
type Reconciler struct {
	Client client.Client
	// Reader reads past the cache (the manager's APIReader). A lease the cache
	// calls stale is read again through it before the cluster is made Unknown:
	// a watch that stopped delivering (seen after the hub's etcd and apiserver
	// restarted together) must not take a live cluster out of its placements.
	// Optional.
	Reader client.Reader
	// GraceMultiplier: a lease older than GraceMultiplier x leaseDurationSeconds
	// makes the cluster Unknown. Default 5.
	GraceMultiplier int
	// Now returns the current time. Default time.Now.
	Now func() time.Time
}

// SetupWithManager registers the reconciler; it watches ManagedClusters and the
// clusters' leases.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.GraceMultiplier <= 0 {
		r.GraceMultiplier = DefaultGraceMultiplier
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	isClusterLease := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == LeaseName })
	return ctrl.NewControllerManagedBy(mgr).
		Named("managedcluster-health").
		For(&clusterv1.ManagedCluster{}).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			return []ctrl.Request{{NamespacedName: client.ObjectKey{Name: o.GetNamespace()}}}
		}), builder.WithPredicates(isClusterLease)).
		Complete(r)
}

// Reconcile: get, lease check (Available Unknown when stale), taints from Available.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	if apierrors.IsConflict(err) {
		// Another controller (or the agent) wrote first: read again, quietly.
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cluster.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	now := r.Now()
	var requeue time.Duration
	if accepted := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted); cluster.Spec.HubAcceptsClient && accepted != nil && accepted.Status == metav1.ConditionTrue {
		lease := &coordinationv1.Lease{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Name, Name: LeaseName}, lease)
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		renewed := LastHeard(lease.Spec.RenewTime, *accepted) // without a lease the clock starts at acceptance
		grace := Grace(r.GraceMultiplier, cluster)
		stale, left := LeaseStale(renewed, now, grace)
		if stale && err == nil {
			if stored := r.storedRenewal(ctx, cluster.Name, lease, renewed); stored.After(renewed) {
				renewed = stored
				stale, left = LeaseStale(renewed, now, grace)
			}
		}
		if stale {
			before := cluster.Status.DeepCopy()
			meta.SetStatusCondition(&cluster.Status.Conditions, metav1.Condition{
				Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionUnknown, Reason: ReasonLeaseUpdateStopped,
				Message: fmt.Sprintf(leaseStoppedMessageFormat, grace),
			})
			conditions.Fit(ctx, nil, cluster) // a fixed message; fitted like every other
			if !equality.Semantic.DeepEqual(before, &cluster.Status) {
				if err := r.Client.Status().Update(ctx, cluster); err != nil {
					return ctrl.Result{}, err
				}
				log.FromContext(ctx).Info("the cluster's lease is stale: Available is Unknown",
					"cluster", cluster.Name, "renewed", renewed.UTC().Format(time.RFC3339Nano), "grace", grace.String())
			}
		} else {
			requeue = left + 100*time.Millisecond
		}
	}
	taints, changed := Taints(cluster.Spec.Taints, cluster.Status.Conditions, metav1.NewTime(now.Truncate(time.Second)))
	if changed {
		cluster.Spec.Taints = taints
		if err := r.Client.Update(ctx, cluster); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// storedRenewal reads a lease the cache calls stale past the cache (Reader)
// and returns its renewal when newer than cached: the cache is behind, and the
// cluster is decided on the stored lease, coming back through the reader when
// that would expire (the cache's events may not come). A lease gone from the
// apiserver, or one that cannot be read, leaves the cached renewal.
func (r *Reconciler) storedRenewal(ctx context.Context, cluster string, cached *coordinationv1.Lease, renewed time.Time) time.Time {
	if r.Reader == nil {
		return renewed
	}
	stored := &coordinationv1.Lease{}
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(cached), stored); err != nil {
		if !apierrors.IsNotFound(err) {
			log.FromContext(ctx).Info("cannot read the lease past the cache; deciding on the cached one", "cluster", cluster, "error", err.Error())
		}
		return renewed
	}
	if stored.Spec.RenewTime == nil || !stored.Spec.RenewTime.After(renewed) {
		return renewed
	}
	log.FromContext(ctx).Info("the hub's lease cache is behind the apiserver; deciding on the stored lease",
		"cluster", cluster, "cached", renewed.UTC().Format(time.RFC3339Nano), "stored", stored.Spec.RenewTime.UTC().Format(time.RFC3339Nano))
	return stored.Spec.RenewTime.Time
}
