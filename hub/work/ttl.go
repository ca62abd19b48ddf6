package work

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Expiry says what to do with a finished work: delete it now, wait, or
// nothing (after == 0 and !now).
type Expiry struct {
	Now   bool
	After time.Duration
}

// ExpiryFor decides, as OCM's hub does, when a work with
// spec.deleteOption.ttlSecondsAfterFinished goes: ttl seconds after its
// work-level Complete condition turned True (a condition rule made it so).
// Works without the TTL, not complete, being deleted, or made by a
// ManifestWorkReplicaSet (which manages its works itself) are left alone.
func ExpiryFor(w *workv1.ManifestWork, now time.Time) Expiry {
	if w.DeletionTimestamp != nil || w.Spec.DeleteOption == nil || w.Spec.DeleteOption.TTLSecondsAfterFinished == nil {
		return Expiry{}
	}
	if _, ok := w.Labels[workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey]; ok {
		return Expiry{}
	}
	c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkComplete)
	if c == nil || c.Status != metav1.ConditionTrue {
		return Expiry{}
	}
	ttl := *w.Spec.DeleteOption.TTLSecondsAfterFinished
	if ttl < 0 { // refused at admission; never delete early because of it
		return Expiry{}
	}
	deadline := c.LastTransitionTime.Add(time.Duration(ttl) * time.Second)
	if left := deadline.Sub(now); left > 0 {
		return Expiry{After: left}
	}
	return Expiry{Now: true}
}

// expirer deletes finished works whose TTL has passed (ExpiryFor). It owns no
// condition and no finalizer.
type expirer struct {
	client client.Client
	now    func() time.Time
}

func (r *expirer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := &workv1.ManifestWork{}
	if err := r.client.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	e := ExpiryFor(w, r.now())
	if !e.Now {
		return ctrl.Result{RequeueAfter: e.After}, nil
	}
	ctrl.LoggerFrom(ctx).Info("deleting a finished ManifestWork: its ttlSecondsAfterFinished has passed",
		"ttlSecondsAfterFinished", *w.Spec.DeleteOption.TTLSecondsAfterFinished)
	uid := w.UID
	return ctrl.Result{}, client.IgnoreNotFound(r.client.Delete(ctx, w, client.Preconditions{UID: &uid}))
}
