package controller

import (
	"context"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub/placement/scheduling"
	"flotilla.dev/flotilla/internal/conditions"
)

// Reconcile schedules one Placement: read a snapshot, decide on it, write at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// 1. Get the Placement. Deleted ones need nothing: their decisions are owned.
	var p clusterv1beta1.Placement
	if err := r.Get(ctx, req.NamespacedName, &p); err != nil {
		if apierrors.IsNotFound(err) {
			r.statuses.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if p.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	if _, off := p.Annotations[clusterv1beta1.PlacementDisableAnnotation]; off {
		return ctrl.Result{}, nil
	}

	// 2. Snapshot.
	current, err := r.currentDecisions(ctx, &p)
	if err != nil {
		return ctrl.Result{}, err
	}
	snap, err := r.snapshot(ctx, &p, current)
	if err != nil {
		return ctrl.Result{}, err
	}

	// 3. Decide.
	res := r.registry.Schedule(snap, &p)

	// 4. Write decisions, then status.
	var pages []scheduling.Page
	if res.Misconfigured != nil {
		pages = keepPages(&p, current)
	} else {
		pages = scheduling.Repaginate(p.Name, res.Groups, p.Spec.SortBy == clusterv1beta1.PlacementSortByScore, pagesOf(current))
	}
	requeue := res.RequeueAfter
	byScore := res.Misconfigured == nil && p.Spec.SortBy == clusterv1beta1.PlacementSortByScore
	if byScore {
		// spec.scoreRateLimit: new scores alone are written at most that often.
		var wait time.Duration
		pages, wait = scheduling.HoldScores(pagesOf(current), pages, r.scores.last(p.UID), scheduling.ScoreRateLimit(&p), r.now())
		if wait > 0 && (requeue == 0 || wait < requeue) {
			requeue = wait
		}
	}
	if err := r.writeDecisions(ctx, &p, current, pages); err != nil {
		if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: requeueSoon}, nil // the cache is behind our own writes
		}
		return ctrl.Result{}, err
	}
	if byScore && !scheduling.SamePages(pagesOf(current), pages) {
		r.scores.wrote(p.UID, r.now())
	}
	next := p
	next.Status = desiredStatus(&p, res, pages)
	conditions.Fit(ctx, r.recorder, &next) // a message quoting a huge expression is cut
	// A cache that has not seen this controller's last status write may hold
	// an older status that happens to equal the one wanted now: write anyway
	// (a stale object conflicts and is retried) rather than skip.
	key := client.ObjectKeyFromObject(&p)
	if !reflect.DeepEqual(next.Status, p.Status) || !r.statuses.seen(key, p.ResourceVersion) {
		if err := r.Status().Update(ctx, &next); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: requeueSoon}, nil
			}
			return ctrl.Result{}, err
		}
		r.statuses.wrote(key, next.ResourceVersion)
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// scoreWrites remembers when each placement's scores were last written (for
// spec.scoreRateLimit). A restarted hub starts afresh: the first change is
// written at once.
type scoreWrites struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

func (s *scoreWrites) last(uid types.UID) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at[uid]
}

func (s *scoreWrites) wrote(uid types.UID, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at == nil {
		s.at = map[types.UID]time.Time{}
	}
	s.at[uid] = t
}

// requeueSoon retries after a write lost a race with the cache.
const requeueSoon = 200 * time.Millisecond

// statusWrites remembers, per Placement, the resourceVersion of this
// controller's last status write.
type statusWrites struct{ m sync.Map }

// seen tells whether an object at resourceVersion rv reflects the last status
// write (or none was made).
func (w *statusWrites) seen(key types.NamespacedName, rv string) bool {
	last, ok := w.m.Load(key)
	return !ok || last.(string) == rv
}

func (w *statusWrites) wrote(key types.NamespacedName, rv string) { w.m.Store(key, rv) }

func (w *statusWrites) forget(key types.NamespacedName) { w.m.Delete(key) }
