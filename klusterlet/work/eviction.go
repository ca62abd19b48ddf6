package work

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/klusterlet/work/applied"
	"flotilla.dev/flotilla/klusterlet/work/apply"
)

// evictor removes AppliedManifestWorks whose ManifestWork is gone from the hub,
// with their resources, once they have been orphaned for the grace period. It
// looks after every record of this hub (whatever agent wrote it: an agent may
// be renamed, and the records of its earlier name are this agent's now) and
// this agent's records of other hubs (the cluster moved hubs). Records of
// other hubs written by other agents are none of its business. The start of the grace period
// is recorded in status.evictionStartTime and cleared if the work comes back.
type evictor struct {
	hub, spoke client.Client
	// hubReader reads the hub without the cache, to confirm that a work is
	// gone: the cache skips works it cannot decode (internal/tolerant).
	hubReader                     client.Reader
	applier                       *apply.Applier
	clusterName, agentID, hubHash string
	grace                         time.Duration
	log                           logr.Logger
}

// Start sweeps periodically until ctx ends (manager.Runnable).
func (e *evictor) Start(ctx context.Context) error {
	every := e.grace / 4
	if every > 30*time.Second {
		every = 30 * time.Second
	}
	if every < 100*time.Millisecond {
		every = 100 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		e.sweep(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (e *evictor) sweep(ctx context.Context) {
	list := &workv1.AppliedManifestWorkList{}
	if err := e.spoke.List(ctx, list); err != nil {
		e.log.Error(err, "cannot list AppliedManifestWorks")
		return
	}
	for i := range list.Items {
		amw := &list.Items[i]
		ours := applied.OfThisHub(amw, e.hubHash, e.agentID, e.clusterName) || amw.Spec.AgentID == e.agentID
		if !ours || amw.DeletionTimestamp != nil {
			continue
		}
		orphaned := amw.Spec.HubHash != e.hubHash
		if !orphaned {
			err := e.hub.Get(ctx, client.ObjectKey{Namespace: e.clusterName, Name: amw.Spec.ManifestWorkName}, &workv1.ManifestWork{})
			if apierrors.IsNotFound(err) && e.hubReader != nil {
				err = e.hubReader.Get(ctx, client.ObjectKey{Namespace: e.clusterName, Name: amw.Spec.ManifestWorkName}, workMetadata())
			}
			if err != nil && !apierrors.IsNotFound(err) {
				continue
			}
			orphaned = apierrors.IsNotFound(err)
		}
		if err := e.evict(ctx, amw, orphaned); err != nil {
			e.log.Error(err, "eviction of an orphaned AppliedManifestWork failed; will retry", "appliedManifestWork", amw.Name)
		}
	}
}

func (e *evictor) evict(ctx context.Context, amw *workv1.AppliedManifestWork, orphaned bool) error {
	switch {
	case !orphaned && amw.Status.EvictionStartTime == nil:
		return nil
	case !orphaned:
		amw.Status.EvictionStartTime = nil
		return e.spoke.Status().Update(ctx, amw)
	case amw.Status.EvictionStartTime == nil:
		now := metav1.Now()
		amw.Status.EvictionStartTime = &now
		e.log.Info("ManifestWork is gone from the hub; its resources will be removed after the grace period",
			"appliedManifestWork", amw.Name, "work", amw.Spec.ManifestWorkName, "grace", e.grace.String())
		return e.spoke.Status().Update(ctx, amw)
	case time.Since(amw.Status.EvictionStartTime.Time) < e.grace:
		return nil
	}
	done, err := cleanup(ctx, e.spoke, e.applier, amw, nil)
	if err != nil || !done {
		return err
	}
	e.log.Info("evicted orphaned AppliedManifestWork", "appliedManifestWork", amw.Name)
	return dropRecord(ctx, e.spoke, amw)
}

// workMetadata is an empty ManifestWork read as metadata only, which decodes
// whatever its spec holds.
func workMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(workv1.SchemeGroupVersion.WithKind("ManifestWork"))
	return m
}
