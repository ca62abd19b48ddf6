package work

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"flotilla.dev/flotilla/klusterlet/work/applied"
	"flotilla.dev/flotilla/klusterlet/work/apply"
)

// waitCleanup is how soon a deletion that is still in progress is checked again
// (deletions also wake the work up through the watch on applied resources).
const waitCleanup = time.Second

// finalize handles a ManifestWork being deleted: its resources are deleted (or
// kept, per spec.deleteOption), then its AppliedManifestWork, then the
// finalizer is dropped so the hub can let the work go.
func (r *reconciler) finalize(ctx context.Context, work *workv1.ManifestWork) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(work, workv1.ManifestWorkFinalizer) {
		return ctrl.Result{}, nil
	}
	name := applied.Name(r.hubHash, work.Name)
	amw := &workv1.AppliedManifestWork{}
	err := r.spokeReader.Get(ctx, client.ObjectKey{Name: name}, amw)
	if apierrors.IsNotFound(err) && r.hasPending(ctx, work, name) {
		// The agent stopped while it wrote a new work's record and resources
		// at once: resources are there, the record is not. Make the record,
		// so they are cleaned up as every work's are.
		amw, err = r.ensureApplied(ctx, work.Name)
	}
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return ctrl.Result{}, err
	default:
		if done, err := r.removeApplied(ctx, work, amw); err != nil || !done {
			return ctrl.Result{RequeueAfter: waitCleanup}, err
		}
		// Once per deletion: whoever wonders where an object went finds it here.
		opt := workv1.DeletePropagationPolicyTypeForeground
		if work.Spec.DeleteOption != nil {
			opt = work.Spec.DeleteOption.PropagationPolicy
		}
		ctrl.LoggerFrom(ctx).Info("the work was deleted on the hub; what was applied for it is removed (or kept, per its deleteOption)",
			"resources", len(amw.Status.AppliedResources), "deleteOption", opt)
	}
	controllerutil.RemoveFinalizer(work, workv1.ManifestWorkFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.hub.Update(ctx, work))
}

// releaseRecord finishes the deletion of an AppliedManifestWork someone deleted
// while its ManifestWork still exists.
func (r *reconciler) releaseRecord(ctx context.Context, work *workv1.ManifestWork, amw *workv1.AppliedManifestWork) (ctrl.Result, error) {
	_, err := r.removeApplied(ctx, work, amw)
	return ctrl.Result{RequeueAfter: waitCleanup}, err
}

// abandon removes what was applied for a work that is gone from the hub and
// never held the agent's finalizer, then its record, and forgets the work.
// An object whose deletion is still in progress (it has finalizers) keeps the
// record, and with it the evictor's eye on what is left.
func (r *reconciler) abandon(ctx context.Context, work *workv1.ManifestWork, amw *workv1.AppliedManifestWork) (ctrl.Result, error) {
	_, err := r.removeApplied(ctx, work, amw)
	r.forget(ctx, work.Name)
	return ctrl.Result{}, err
}

// removeApplied deletes (or keeps, per spec.deleteOption) what amw lists and
// what carries an owner reference to it, then drops the record once nothing
// is left; done says it was dropped.
func (r *reconciler) removeApplied(ctx context.Context, work *workv1.ManifestWork, amw *workv1.AppliedManifestWork) (done bool, err error) {
	r.addUnrecorded(ctx, work, amw)
	if done, err = cleanup(ctx, r.spoke, r.applier, amw, work.Spec.DeleteOption); err != nil || !done {
		return false, err
	}
	return true, dropRecord(ctx, r.spoke, amw)
}

// addUnrecorded adds to amw's status (in memory only) the objects of the
// work's manifests that carry an owner reference to amw, or the mark of one
// to come (apply.PendingOwnerAnnotation naming amw), but are not recorded in
// it: the agent records after it writes the work's status, so an agent that
// stopped between the apply and the record left them unlisted. They are
// then cleaned up like the recorded ones. An object that cannot be read is
// skipped (it is either gone or its kind is not served).
func (r *reconciler) addUnrecorded(ctx context.Context, work *workv1.ManifestWork, amw *workv1.AppliedManifestWork) {
	recorded := map[applied.Key]bool{}
	for _, res := range amw.Status.AppliedResources {
		recorded[applied.KeyOf(res)] = true
	}
	r.eachTarget(work, func(t apply.Target, key applied.Key) bool {
		if recorded[key] {
			return true
		}
		live, err := r.applier.Get(ctx, t)
		if err != nil || live == nil || !(ownedBy(live.GetOwnerReferences(), amw.UID) || (writtenBy(work, key) && pendingFor(live, amw.Name))) {
			return true
		}
		recorded[key] = true
		amw.Status.AppliedResources = append(amw.Status.AppliedResources, workv1.AppliedManifestResourceMeta{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: key.Group, Resource: key.Resource, Namespace: key.Namespace, Name: key.Name},
			Version:            t.GVR.Version,
			UID:                string(live.GetUID()),
		})
		return true
	})
}

// eachTarget calls fn with the target and key of each of the work's
// manifests that can be read and mapped to a resource, until fn returns
// false.
func (r *reconciler) eachTarget(work *workv1.ManifestWork, fn func(t apply.Target, key applied.Key) bool) {
	for _, m := range work.Spec.Workload.Manifests {
		obj, err := apply.Decode(m)
		if obj == nil || err != nil {
			continue
		}
		t, err := r.applier.Resolve(obj)
		if err != nil {
			continue
		}
		if !fn(t, applied.Key{Group: t.GVR.Group, Resource: t.GVR.Resource, Namespace: t.Namespace, Name: t.Name}) {
			return
		}
	}
}

// pendingFor says live was written for the record named amw before that
// record existed, and has not been adopted yet.
func pendingFor(live *unstructured.Unstructured, amw string) bool {
	return live.GetAnnotations()[apply.PendingOwnerAnnotation] == amw
}

// writtenBy says the work writes the object key (its strategy is not
// ReadOnly): only such an object can carry the work's pending mark by the
// agent's hand.
func writtenBy(work *workv1.ManifestWork, key applied.Key) bool {
	cfg := apply.ConfigFor(work.Spec.ManifestConfigs, key.Group, key.Resource, key.Namespace, key.Name)
	return cfg == nil || cfg.UpdateStrategy == nil || cfg.UpdateStrategy.Type != workv1.UpdateStrategyTypeReadOnly
}

// hasPending says one of the work's manifests names an object marked
// pending for the record named amw.
func (r *reconciler) hasPending(ctx context.Context, work *workv1.ManifestWork, amw string) bool {
	found := false
	r.eachTarget(work, func(t apply.Target, key applied.Key) bool {
		if writtenBy(work, key) {
			live, err := r.applier.Get(ctx, t)
			found = err == nil && live != nil && pendingFor(live, amw)
		}
		return !found
	})
	return found
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, ref := range refs {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

// cleanup deletes the resources an AppliedManifestWork records and waits until
// they are gone, except those opt orphans and those another
// AppliedManifestWork also records, which only lose this owner reference. It
// reports done when nothing is left to wait for.
func cleanup(ctx context.Context, spoke client.Client, a *apply.Applier, amw *workv1.AppliedManifestWork, opt *workv1.DeleteOption) (bool, error) {
	all := &workv1.AppliedManifestWorkList{}
	if err := spoke.List(ctx, all); err != nil {
		return false, err
	}
	done := true
	var firstErr error
	for _, res := range amw.Status.AppliedResources {
		gvr := schema.GroupVersionResource{Group: res.Group, Version: res.Version, Resource: res.Resource}
		if applied.Orphaned(res, opt) || applied.OwnedElsewhere(res, amw.Name, all.Items) {
			if err := a.Release(ctx, gvr, res.Namespace, res.Name, types.UID(res.UID), amw.UID, amw.Name); err != nil {
				done = false
				if firstErr == nil {
					firstErr = fmt.Errorf("release %s %s/%s: %w", res.Resource, res.Namespace, res.Name, err)
				}
			}
			continue
		}
		gone, err := a.Delete(ctx, gvr, res.Namespace, res.Name, types.UID(res.UID), metav1.DeletePropagationBackground)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("delete %s %s/%s: %w", res.Resource, res.Namespace, res.Name, err)
		}
		if err != nil || !gone {
			done = false
		}
	}
	return done, firstErr
}

// dropRecord removes the finalizer from an AppliedManifestWork and deletes it.
func dropRecord(ctx context.Context, spoke client.Client, amw *workv1.AppliedManifestWork) error {
	if controllerutil.RemoveFinalizer(amw, workv1.AppliedManifestWorkFinalizer) {
		if err := spoke.Update(ctx, amw); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	return client.IgnoreNotFound(spoke.Delete(ctx, amw))
}
