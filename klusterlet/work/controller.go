package work

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"flotilla.dev/flotilla/internal/conditions"
	"flotilla.dev/flotilla/klusterlet/work/applied"
	"flotilla.dev/flotilla/klusterlet/work/apply"
	"flotilla.dev/flotilla/klusterlet/work/conflict"
	"flotilla.dev/flotilla/klusterlet/work/executor"
	"flotilla.dev/flotilla/klusterlet/work/rules"
	"flotilla.dev/flotilla/klusterlet/work/status"
)

// retryFailed is how soon a work with a failing manifest is tried again (a CRD
// may still be settling, a namespace may be about to appear).
const retryFailed = 2 * time.Second

var crdGK = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

type reconciler struct {
	hub         client.Client
	spoke       client.Client
	spokeReader client.Reader
	applier     *apply.Applier
	// executors checks spec.executor rights and impersonates executors;
	// executorAppliers holds one applier per executor (guarded by mu).
	executors        *executor.Authorizer
	executorAppliers map[string]*apply.Applier
	watcher          *watcher
	// recorder records Events on ManifestWorks (a status message that was cut).
	recorder events.EventRecorder

	clusterName, agentID, hubHash string
	resync                        time.Duration

	mu sync.Mutex
	// written remembers the resourceVersion of each AppliedManifestWork this
	// agent last wrote, so a lagging cache is noticed and bypassed.
	written map[string]string
	// failures counts consecutive passes with a failing manifest, per work.
	failures map[string]int
	// cleanupOnly (optional) says the cluster is being deleted: finish
	// deletions, apply nothing.
	cleanupOnly func() bool
	// claims remembers which object each work asks for, with which content,
	// so both sides of a conflict report it.
	claims *conflict.Registry
	// events wakes works up (those whose conflicts changed).
	events chan<- event.TypedGenericEvent[*workv1.ManifestWork]
	// tracer (optional) is told when works pass a Stage.
	tracer Tracer
}

// workForApplied maps an AppliedManifestWork event to its ManifestWork. Every
// record of this hub for this cluster counts, whichever agent ID wrote it: a
// record of this agent's earlier name is taken over when its work is reconciled.
func (r *reconciler) workForApplied(_ context.Context, amw *workv1.AppliedManifestWork) []reconcile.Request {
	if !applied.OfThisHub(amw, r.hubHash, r.agentID, r.clusterName) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: r.clusterName, Name: amw.Spec.ManifestWorkName}}}
}

// Reconcile applies one ManifestWork: get, finalizer, record, apply, clean up
// what left the work, write status only when it changed.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.trace(req.NamespacedName, StageStart)
	work := &workv1.ManifestWork{}
	if err := r.hub.Get(ctx, req.NamespacedName, work); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(ctx, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := ctrl.LoggerFrom(ctx)
	if work.DeletionTimestamp != nil {
		return r.finalize(ctx, work)
	}
	if r.cleanupOnly != nil && r.cleanupOnly() {
		// The cluster is being deleted: nothing new reaches it. The hub deletes
		// this work too, and the deletion is handled above.
		return ctrl.Result{}, nil
	}
	var (
		amw       *workv1.AppliedManifestWork
		results   []status.ManifestResult
		outcome   outcome
		finalized chan error
		adopted   chan error
	)
	withFinalizer := work
	if r.firstPass(ctx, work) {
		// A new work that came with its finalizer (the hub's admission puts
		// it on): its record and its resources are written at once, and the
		// resources' owner references to the record follow while the status
		// goes to the hub. Two round trips before the hub hears of the
		// apply; what a stop in between leaves, cleanup finds by
		// apply.PendingOwnerAnnotation (finalize.go).
		recorded := make(chan error, 1)
		go func() {
			var err error
			amw, err = r.ensureApplied(ctx, work.Name)
			recorded <- err
		}()
		pending := &workv1.AppliedManifestWork{ObjectMeta: metav1.ObjectMeta{Name: applied.Name(r.hubHash, work.Name)}}
		results, outcome = r.applyAll(ctx, work, pending)
		if err := <-recorded; err != nil {
			return ctrl.Result{}, fmt.Errorf("record on the managed cluster: %w", err)
		}
		if amw.DeletionTimestamp != nil {
			return r.releaseRecord(ctx, work, amw)
		}
		adopted = make(chan error, 1)
		go func() { adopted <- r.adopt(ctx, amw, outcome.adopt) }()
	} else {
		// The finalizer goes to the hub while the managed cluster is written
		// (two apiservers, one round trip instead of two); the status write
		// waits for it. The record exists before anything is applied, so a
		// work deleted in between still has its resources found
		// (eviction.go).
		if !controllerutil.ContainsFinalizer(work, workv1.ManifestWorkFinalizer) {
			withFinalizer = work.DeepCopy()
			controllerutil.AddFinalizer(withFinalizer, workv1.ManifestWorkFinalizer)
			finalized = make(chan error, 1)
			go func() { finalized <- r.hub.Update(ctx, withFinalizer) }()
		}
		var err error
		amw, err = r.ensureApplied(ctx, work.Name)
		if err != nil {
			return ctrl.Result{}, errors.Join(fmt.Errorf("record on the managed cluster: %w", err), wait(finalized))
		}
		if amw.DeletionTimestamp != nil {
			// Someone deleted the record on the managed cluster: clean up what it
			// lists, let it go, and apply again from scratch on the next pass.
			if err := wait(finalized); err != nil {
				return ctrl.Result{}, err
			}
			return r.releaseRecord(ctx, work, amw)
		}
		results, outcome = r.applyAll(ctx, work, amw)
	}
	r.trace(req.NamespacedName, StageApplied)
	if err := wait(finalized); apierrors.IsNotFound(err) {
		// The work left the hub before it held the finalizer: nothing there
		// waits for this agent, and no later event names it. What was just
		// applied for it is removed now, as its deletion would have; left to
		// the evictor, it stayed on the cluster for the eviction grace (an
		// hour by default; test/chaos found it after a partition healed).
		log.Info("the work was deleted from the hub while it was applied; removing what was applied for it")
		return r.abandon(ctx, work, amw)
	} else if err != nil {
		return ctrl.Result{}, err
	}
	work = withFinalizer // its resourceVersion, for the status write
	r.watcher.SetFollowed(work.Name, outcome.followed)
	affected := r.reportConflicts(work.Name, results, outcome.claims)

	// The new status, its messages cut to fit the CRD (an apiserver error can
	// quote a whole manifest); the full text goes to the log and an Event.
	// It is written before the record: the hub learns of the apply one write
	// sooner, and the record's resources carry an owner reference to it
	// already (finalize also finds what the record misses, finalize.go).
	next := *work
	next.Status = status.Build(work.Status, results, work.Generation)
	conditions.Fit(ctx, r.recorder, &next)
	if !equality.Semantic.DeepEqual(next.Status, work.Status) {
		if err := r.hub.Status().Update(ctx, &next); err != nil {
			err = errors.Join(err, wait(adopted))
			if apierrors.IsNotFound(err) && adopted != nil {
				// A first pass whose work left the hub meanwhile (its
				// finalizer taken off): nothing there waits for this agent
				// any more, so what it just applied goes now.
				log.Info("the work was deleted from the hub while it was applied; removing what was applied for it")
				return r.abandon(ctx, work, amw)
			}
			return ctrl.Result{}, err
		}
		r.trace(req.NamespacedName, StageStatus)
	}
	if err := wait(adopted); err != nil {
		// The record is written all the same: the next pass, soon, gives
		// what was not adopted its owner reference.
		log.Info("could not give new resources their owner reference; the next pass will", "error", err.Error())
		outcome.failed = true
	}

	err := r.record(ctx, amw, outcome, work.Spec.DeleteOption, log)
	// After record: a work that let go of an object has released it by now,
	// so the works waiting for it find it free.
	r.wake(ctx, affected)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.nextCheck(req.Name, outcome.failed)}, nil
}

// wait returns the result of a write started on its own goroutine (nil
// channel: none was started).
func wait(done <-chan error) error {
	if done == nil {
		return nil
	}
	return <-done
}

// nextCheck is when to look at a work again: after StatusSyncInterval, or,
// while a manifest keeps failing, after 2s, 4s, 8s, ... up to that interval.
func (r *reconciler) nextCheck(work string, failed bool) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !failed {
		delete(r.failures, work)
		return r.resync
	}
	n := r.failures[work]
	if n < 16 {
		r.failures[work] = n + 1
	}
	if d := retryFailed << n; d < r.resync {
		return d
	}
	return r.resync
}

// forget drops what the reconciler remembers about a work that is gone, and
// wakes the works it was in conflict with.
func (r *reconciler) forget(ctx context.Context, work string) {
	r.mu.Lock()
	delete(r.failures, work)
	delete(r.written, applied.Name(r.hubHash, work))
	r.mu.Unlock()
	r.watcher.SetFollowed(work, nil)
	r.wake(ctx, r.claims.Drop(work))
}

// wake has the named works of this cluster reconciled again.
func (r *reconciler) wake(ctx context.Context, works []string) {
	for _, name := range works {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: r.clusterName, Name: name}}
		select {
		case r.events <- event.TypedGenericEvent[*workv1.ManifestWork]{Object: w}:
		case <-ctx.Done():
			return
		}
	}
}

// lookupApplied reads an AppliedManifestWork from the cache (nil when absent).
func (r *reconciler) lookupApplied(ctx context.Context) conflict.Lookup {
	return func(name string) *workv1.AppliedManifestWork {
		amw := &workv1.AppliedManifestWork{}
		if err := r.spoke.Get(ctx, client.ObjectKey{Name: name}, amw); err != nil {
			return nil
		}
		return amw
	}
}

// ensureApplied returns the work's AppliedManifestWork, creating it first.
func (r *reconciler) ensureApplied(ctx context.Context, workName string) (*workv1.AppliedManifestWork, error) {
	name := applied.Name(r.hubHash, workName)
	amw := &workv1.AppliedManifestWork{}
	err := r.spoke.Get(ctx, client.ObjectKey{Name: name}, amw)
	if err == nil && (amw.Spec.AgentID != r.agentID || amw.Labels[applied.ClusterLabel] != r.clusterName) && amw.DeletionTimestamp == nil {
		// Recorded by an earlier agent of this cluster (registration may give
		// the agent a new name), or by one that did not label its cluster:
		// this agent takes the record over.
		amw.Spec.AgentID = r.agentID
		if amw.Labels == nil {
			amw.Labels = map[string]string{}
		}
		amw.Labels[applied.ClusterLabel] = r.clusterName
		if err := r.spoke.Update(ctx, amw); err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.written[name] = amw.ResourceVersion
		r.mu.Unlock()
		return amw, nil
	}
	if err == nil {
		r.mu.Lock()
		last, ok := r.written[name]
		r.mu.Unlock()
		if !ok || last == amw.ResourceVersion {
			return amw, nil
		}
		// The cache has not seen our last write yet: read the apiserver.
		if err = r.spokeReader.Get(ctx, client.ObjectKey{Name: name}, amw); err == nil {
			r.mu.Lock()
			r.written[name] = amw.ResourceVersion
			r.mu.Unlock()
		}
		return amw, err
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	amw = &workv1.AppliedManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{workv1.AppliedManifestWorkFinalizer},
			Labels: map[string]string{applied.ClusterLabel: r.clusterName}},
		Spec: workv1.AppliedManifestWorkSpec{HubHash: r.hubHash, AgentID: r.agentID, ManifestWorkName: workName},
	}
	err = r.spoke.Create(ctx, amw)
	if apierrors.IsAlreadyExists(err) {
		err = r.spokeReader.Get(ctx, client.ObjectKey{Name: name}, amw)
	}
	return amw, err
}

// outcome is what one pass applied, for the AppliedManifestWork record.
type outcome struct {
	applied []workv1.AppliedManifestResourceMeta
	// keep are keys of manifests still in the work that were not applied this
	// pass (failed): their earlier record stays.
	keep map[applied.Key]bool
	// readOnly are keys of ReadOnly manifests: never deleted, only released.
	readOnly map[applied.Key]bool
	// unresolved is set when a manifest could not be mapped to a resource: then
	// nothing is cleaned up, since it might be one of the recorded resources.
	unresolved bool
	failed     bool
	// claims are the objects the work writes with their manifest hashes,
	// per manifest index (absent: the manifest writes nothing).
	claims map[int]claim
	// followed are ReadOnly objects with feedbackScrapeType Watch: their
	// changes wake the work although it does not own them.
	followed []Followed
	// adopt are the objects written while the record was being created
	// (firstPass): they get their owner reference to it (adopt).
	adopt []written
}

// written is an object as a write of this pass left it.
type written struct {
	target apply.Target
	live   *unstructured.Unstructured
}

// firstPass says a work takes the fast path of a new work: it holds the
// finalizer already (a work deleted meanwhile waits for this agent, so
// nothing applied can be lost), it has no record yet, and every manifest is
// written by Update, the strategy that writes every object it applies, with
// the pending mark (CreateOnly leaves an existing object as it is,
// ServerSideApply and ReadOnly go the way of a known record).
func (r *reconciler) firstPass(ctx context.Context, work *workv1.ManifestWork) bool {
	if !controllerutil.ContainsFinalizer(work, workv1.ManifestWorkFinalizer) {
		return false
	}
	for _, c := range work.Spec.ManifestConfigs {
		if s := c.UpdateStrategy; s != nil && s.Type != "" && s.Type != workv1.UpdateStrategyTypeUpdate {
			return false
		}
	}
	err := r.spoke.Get(ctx, client.ObjectKey{Name: applied.Name(r.hubHash, work.Name)}, &workv1.AppliedManifestWork{})
	return apierrors.IsNotFound(err)
}

// adopt gives the objects a first pass wrote their owner reference to the
// work's record, all at once.
func (r *reconciler) adopt(ctx context.Context, amw *workv1.AppliedManifestWork, objs []written) error {
	owner := metav1.OwnerReference{APIVersion: workv1.GroupVersion.String(), Kind: "AppliedManifestWork", Name: amw.Name, UID: amw.UID}
	errs := make([]error, len(objs))
	var wg sync.WaitGroup
	for i, o := range objs {
		if ownedBy(o.live.GetOwnerReferences(), amw.UID) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.applier.Adopt(ctx, o.target, o.live, owner); err != nil {
				errs[i] = fmt.Errorf("%s: %w", describeObject(o.target.GVK.Kind, o.target.Namespace, o.target.Name), err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

type claim struct {
	key  applied.Key
	hash string
}

func (r *reconciler) applyAll(ctx context.Context, work *workv1.ManifestWork, amw *workv1.AppliedManifestWork) ([]status.ManifestResult, outcome) {
	manifests := work.Spec.Workload.Manifests
	objs := make([]*unstructured.Unstructured, len(manifests))
	decodeErrs := make([]error, len(manifests))
	kinds := make([]schema.GroupKind, len(manifests))
	for i, m := range manifests {
		objs[i], decodeErrs[i] = apply.Decode(m)
		if objs[i] != nil {
			kinds[i] = objs[i].GroupVersionKind().GroupKind()
		}
	}
	owner := metav1.OwnerReference{
		APIVersion: workv1.GroupVersion.String(), Kind: "AppliedManifestWork", Name: amw.Name, UID: amw.UID,
	}
	recorded := map[applied.Key]bool{}
	for _, r := range amw.Status.AppliedResources {
		recorded[applied.KeyOf(r)] = true
	}
	results := make([]status.ManifestResult, len(manifests))
	out := outcome{keep: map[applied.Key]bool{}, readOnly: map[applied.Key]bool{}, claims: map[int]claim{}}
	for _, i := range apply.Order(kinds) {
		res := &results[i]
		res.Meta.Ordinal = int32(i)
		if decodeErrs[i] != nil {
			res.ApplyErr, res.AvailabilityMessage = decodeErrs[i], "The manifest could not be read"
			out.unresolved, out.failed = true, true
			continue
		}
		obj := objs[i]
		gvk := obj.GroupVersionKind()
		res.Meta.Group, res.Meta.Version, res.Meta.Kind = gvk.Group, gvk.Version, gvk.Kind
		res.Meta.Name, res.Meta.Namespace = obj.GetName(), obj.GetNamespace()
		t, err := r.applier.Resolve(obj)
		res.Meta.Resource = t.GVR.Resource
		if err != nil {
			res.ApplyErr, res.AvailabilityMessage = err, "The manifest's kind is not served by the managed cluster"
			out.unresolved, out.failed = true, true
			continue
		}
		res.Meta.Namespace = t.Namespace
		key := applied.Key{Group: t.GVR.Group, Resource: t.GVR.Resource, Namespace: t.Namespace, Name: t.Name}
		cfg := apply.ConfigFor(work.Spec.ManifestConfigs, key.Group, key.Resource, key.Namespace, key.Name)
		var strategy *workv1.UpdateStrategy
		if cfg != nil {
			strategy = cfg.UpdateStrategy
			res.HasFeedbackRules = len(cfg.FeedbackRules) > 0
		}
		res.ReadOnly = strategy != nil && strategy.Type == workv1.UpdateStrategyTypeReadOnly
		if res.ReadOnly {
			out.readOnly[key] = true
			if cfg.FeedbackScrapeType == workv1.FeedbackWatchType {
				out.followed = append(out.followed, Followed{GVR: t.GVR, Namespace: t.Namespace, Name: t.Name})
			}
		}

		var live *unstructured.Unstructured
		if status.Completed(work.Status, res.Meta) {
			// Complete (a condition rule said so): as in OCM, no longer
			// updated, only read.
			live, err = r.applier.Get(ctx, t)
		} else {
			var applier *apply.Applier
			applier, err = r.applierFor(ctx, work.Spec.Executor, t, key, strategy, work.Spec.DeleteOption)
			if err == nil {
				if writes(strategy) {
					out.claims[i] = claim{key: key, hash: apply.Hash(t, obj)}
				}
				live, err = applier.Apply(ctx, t, obj, strategy, owner, !recorded[key], r.guard(ctx, amw.UID, describeObject(gvk.Kind, t.Namespace, t.Name)))
			}
		}
		var c *conflict.Error
		if errors.As(err, &c) && live != nil {
			// Another work keeps the object: leave it, say so, and record
			// it, so that work's deletion hands the object over instead
			// of deleting it.
			res.ApplyErr, res.ApplyConflict, res.Conflict = err, true, err.Error()
			out.failed = true
			err = nil
		}
		if err != nil {
			res.ApplyErr = err
			out.failed = true
			out.keep[key] = true
			if live, err = r.applier.Get(ctx, t); err != nil {
				res.AvailabilityMessage = fmt.Sprintf("Reading the resource failed: %v", err)
			}
		}
		switch {
		case live != nil:
			res.Availability = status.Exists
		case res.AvailabilityMessage == "":
			res.Availability = status.Missing
		}
		if live != nil && res.HasFeedbackRules {
			res.Feedback, res.FeedbackErr = status.Feedback(live, cfg.FeedbackRules)
		}
		if live != nil {
			var conditionRules []workv1.ConditionRule
			if cfg != nil {
				conditionRules = cfg.ConditionRules
			}
			res.Rules, res.RulesEvaluated = rules.Evaluate(live, conditionRules), true
		}
		if res.ApplyErr == nil && !res.ReadOnly && live != nil && owner.UID == "" && live.GetAnnotations()[apply.PendingOwnerAnnotation] == owner.Name {
			out.adopt = append(out.adopt, written{target: t, live: live})
		}
		if (res.ApplyErr == nil || res.ApplyConflict) && !res.ReadOnly && live != nil {
			r.watcher.Watch(t.GVR)
			out.applied = append(out.applied, workv1.AppliedManifestResourceMeta{
				ResourceIdentifier: workv1.ResourceIdentifier{Group: key.Group, Resource: key.Resource, Namespace: key.Namespace, Name: key.Name},
				Version:            t.GVR.Version,
				UID:                string(live.GetUID()),
			})
			if gvk.GroupKind() == crdGK && !apply.Established(live) {
				r.applier.WaitEstablished(ctx, live, 5*time.Second)
			}
		}
	}
	return results, out
}

// writes says a strategy writes the whole object's content, so two works
// asking for different content conflict: Update (the default) and
// ServerSideApply. CreateOnly leaves an existing object alone; ReadOnly never
// writes.
func writes(s *workv1.UpdateStrategy) bool {
	return s == nil || s.Type == "" || s.Type == workv1.UpdateStrategyTypeUpdate || s.Type == workv1.UpdateStrategyTypeServerSideApply
}

// guard forbids a work (its AppliedManifestWork's UID self) to overwrite an
// object another work manages with different content (conflict.Decide).
func (r *reconciler) guard(ctx context.Context, self types.UID, object string) apply.Guard {
	return func(live *unstructured.Unstructured, hash string) error {
		if h, found := conflict.Decide(self, hash, apply.HashAnnotation, live, r.lookupApplied(ctx)); found {
			return &conflict.Error{Object: object, Holder: h}
		}
		return nil
	}
}

// describeObject names an object for people: "ConfigMap default/shared".
func describeObject(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}

// reportConflicts records what the work asks for and marks the manifests
// whose object another work of this cluster asks for with different content
// (the work that keeps the object learns of the conflict here; the other one
// from the apply guard). It returns the works whose view of a conflict
// changed, to be woken up.
func (r *reconciler) reportConflicts(work string, results []status.ManifestResult, claims map[int]claim) []string {
	byKey := make(map[applied.Key]string, len(claims))
	for _, c := range claims {
		byKey[c.key] = c.hash
	}
	affected := r.claims.Set(work, byKey)
	for i, c := range claims {
		res := &results[i]
		if res.ApplyConflict {
			continue
		}
		others := r.claims.Others(work, c.key, c.hash)
		if len(others) == 0 {
			continue
		}
		names := make([]string, len(others))
		for j, o := range others {
			names[j] = r.clusterName + "/" + o
		}
		res.Conflict = fmt.Sprintf("%s is also in ManifestWork %s with different content; this work keeps managing it (it managed it first), "+
			"the other work leaves it unchanged until the conflict ends (make both manifests identical, or remove it from one of the works)",
			describeObject(res.Meta.Kind, c.key.Namespace, c.key.Name), listNames(names))
	}
	return affected
}

// listNames joins at most 5 names, so many works cannot make a huge message.
func listNames(names []string) string {
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	return strings.Join(names, ", ")
}

// record brings the AppliedManifestWork up to date: it deletes (or releases)
// the resources of manifests that left the work, and records what is applied
// now plus whatever could not be cleaned up yet.
func (r *reconciler) record(ctx context.Context, amw *workv1.AppliedManifestWork, o outcome, opt *workv1.DeleteOption, log logr.Logger) error {
	prev := amw.Status.AppliedResources
	var kept []workv1.AppliedManifestResourceMeta
	for _, p := range prev {
		if o.keep[applied.KeyOf(p)] {
			kept = append(kept, p)
		}
	}
	cur := applied.Merge(o.applied, kept)
	var pending []workv1.AppliedManifestResourceMeta
	if o.unresolved {
		pending = prev
	} else if stale := applied.Stale(prev, cur); len(stale) > 0 {
		all := &workv1.AppliedManifestWorkList{}
		if err := r.spoke.List(ctx, all); err != nil {
			return err
		}
		for _, s := range stale {
			if err := r.removeStale(ctx, amw, s, opt, o.readOnly[applied.KeyOf(s)], all.Items); err != nil {
				log.Info("could not remove a resource that left the work; will retry", "resource", s, "error", err.Error())
				pending = append(pending, s)
			}
		}
	}
	next := applied.Merge(cur, pending)
	if equality.Semantic.DeepEqual(next, prev) {
		return nil
	}
	amw.Status.AppliedResources = next
	if err := r.spoke.Status().Update(ctx, amw); err != nil {
		return err
	}
	r.mu.Lock()
	r.written[amw.Name] = amw.ResourceVersion
	r.mu.Unlock()
	return nil
}

func (r *reconciler) removeStale(ctx context.Context, amw *workv1.AppliedManifestWork, s workv1.AppliedManifestResourceMeta, opt *workv1.DeleteOption, readOnly bool, all []workv1.AppliedManifestWork) error {
	gvr := schema.GroupVersionResource{Group: s.Group, Version: s.Version, Resource: s.Resource}
	if readOnly || applied.Orphaned(s, opt) || applied.OwnedElsewhere(s, amw.Name, all) {
		return r.applier.Release(ctx, gvr, s.Namespace, s.Name, types.UID(s.UID), amw.UID, amw.Name)
	}
	_, err := r.applier.Delete(ctx, gvr, s.Namespace, s.Name, types.UID(s.UID), metav1.DeletePropagationBackground)
	return err
}
