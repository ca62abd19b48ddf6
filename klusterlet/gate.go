package klusterlet

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/internal/ocm"
)

// delivery is what the hub lets the work agent do, read from the cluster's own
// ManagedCluster (which the cluster's credential can still read after a deny).
type delivery int

const (
	// deliverNothing: the hub does not accept the cluster (denied, not yet
	// granted, deleted, or not known yet). The work agent does not run, so it
	// holds no watch on the hub and applies nothing.
	deliverNothing delivery = iota
	// deliverCleanup: the cluster is being deleted. The work agent only finishes
	// the deletion of works (removing what they applied); it applies nothing.
	deliverCleanup
	// deliverAll: accepted, and the hub has granted the cluster its rights.
	deliverAll
)

func (d delivery) String() string {
	switch d {
	case deliverCleanup:
		return "cleanup only (the cluster is being deleted)"
	case deliverAll:
		return "accepted"
	default:
		return "not accepted"
	}
}

// deliveryFor decides from the ManagedCluster (nil: gone). A deny
// (spec.hubAcceptsClient=false) counts the moment the spec says so, before the
// hub has revoked anything; an acceptance counts once the hub has granted the
// rights (HubAcceptedManagedCluster=True), so the work agent never starts
// against RBAC that is not there yet.
func deliveryFor(mc *clusterv1.ManagedCluster) delivery {
	switch {
	case mc == nil:
		return deliverNothing
	case mc.DeletionTimestamp != nil:
		return deliverCleanup
	case !ocm.Accepted(mc):
		return deliverNothing
	default:
		return deliverAll
	}
}

// workRunner runs the work agent until its context ends; cleanupOnly tells it,
// at any moment, to apply nothing and only finish deletions.
type workRunner func(ctx context.Context, cleanupOnly func() bool) error

// superviseWork runs the work agent exactly while the hub allows delivery: it
// starts it on acceptance, stops it (closing every hub watch it holds) the
// moment the cluster's ManagedCluster says it is no longer accepted, switches it
// to cleanup-only while the cluster is being deleted, and restarts it after
// retry when it fails on its own. It returns when ctx ends.
func superviseWork(ctx context.Context, states <-chan delivery, run workRunner, retry time.Duration, log logr.Logger) {
	var (
		current = deliverNothing
		cleanup atomic.Bool
		cancel  context.CancelFunc
		done    chan error
		backoff <-chan time.Time
	)
	start := func() (context.CancelFunc, chan error) {
		wctx, c := context.WithCancel(ctx)
		d := make(chan error, 1)
		go func() { d <- run(wctx, cleanup.Load) }()
		return c, d
	}
	stop := func() {
		if cancel == nil {
			return
		}
		cancel()
		<-done
		cancel, done = nil, nil
	}
	defer stop()
	for {
		cleanup.Store(current == deliverCleanup)
		switch {
		case current == deliverNothing && cancel != nil:
			stop()
			log.Info("the hub does not accept this cluster now: work agent stopped and its hub watches closed; it resumes when the cluster is accepted again")
		case current != deliverNothing && cancel == nil && backoff == nil:
			cancel, done = start()
			log.Info("work agent started", "delivery", current.String())
		}
		select {
		case <-ctx.Done():
			return
		case current = <-states:
		case err := <-done:
			cancel()
			cancel, done = nil, nil
			if ctx.Err() != nil {
				return
			}
			log.Error(err, "work agent stopped; restarting", "after", retry)
			backoff = time.After(retry)
		case <-backoff:
			backoff = nil
		}
	}
}
