package recorder

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/policy/compliance/history"
	"flotilla.dev/flotilla/policy/propagator"
)

// Options configures the recorder. Every field documents its default.
type Options struct {
	// Store receives the events. Required.
	Store history.Store
	// Retention keeps events this long (the newest of each series is always
	// kept). Default 0: forever.
	Retention time.Duration
	// PruneEvery is how often old events are pruned when Retention is set.
	// Default one hour.
	PruneEvery time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Reconciler records the history of one replica.
type Reconciler struct {
	client.Reader
	opts Options
}

// Setup registers the recorder (and the pruner, when Retention is set) with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.Store == nil {
		return fmt.Errorf("compliance recorder: Options.Store is required")
	}
	if opts.PruneEvery <= 0 {
		opts.PruneEvery = time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Reconciler{Reader: mgr.GetClient(), opts: opts}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("compliance-recorder").
		For(&policyv1.Policy{}, builder.WithPredicates(replicaHistoryChanged)).
		Complete(r); err != nil {
		return err
	}
	// The forwarded compliance events, from a cache of their own that holds
	// only them (the hub's other events are not watched).
	events, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), HTTPClient: mgr.GetHTTPClient(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.Event{}: {Label: labels.SelectorFromSet(labels.Set{ocm.HistoryLabel: "true"})}}})
	if err != nil {
		return err
	}
	if err := mgr.Add(events); err != nil {
		return err
	}
	er := &EventReconciler{events: events, replicas: mgr.GetClient(), opts: opts}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("compliance-recorder-events").
		WatchesRawSource(source.Kind(events, &corev1.Event{}, &handler.TypedEnqueueRequestForObject[*corev1.Event]{})).
		Complete(er); err != nil {
		return err
	}
	if opts.Retention > 0 {
		return mgr.Add(manager.RunnableFunc(r.pruneLoop))
	}
	return nil
}

// replicaHistoryChanged passes replicas when they appear and when their
// status.details change; roots and deletions are ignored (the history stays).
var replicaHistoryChanged = predicate.And(
	predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[policyv1.RootPolicyLabel]
		return ok
	}),
	predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, okOld := e.ObjectOld.(*policyv1.Policy)
			cur, okNew := e.ObjectNew.(*policyv1.Policy)
			return !okOld || !okNew || !equality.Semantic.DeepEqual(old.Status.Details, cur.Status.Details)
		},
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	},
)

// Reconcile records the replica's history entries not yet stored.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var p policyv1.Policy
	if err := r.Get(ctx, req.NamespacedName, &p); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if ok, err := r.isReplica(ctx, &p); err != nil || !ok {
		return ctrl.Result{}, err
	}
	events := entries(&p, r.opts.Now())
	if r.opts.Retention > 0 {
		events = history.Retained(events, r.opts.Now().Add(-r.opts.Retention))
	}
	if len(events) == 0 {
		return ctrl.Result{}, nil
	}
	added, err := r.opts.Store.Record(ctx, events...)
	if err != nil {
		// A store that is down is retried with backoff; the replica still holds the entries.
		return ctrl.Result{}, fmt.Errorf("record the compliance history of %s: %w", req, err)
	}
	if added > 0 {
		ctrl.LoggerFrom(ctx).V(1).Info("compliance history recorded", "new", added)
	}
	return ctrl.Result{}, nil
}

// EventReconciler records the compliance events the managed clusters'
// framework agents forward to the hub (agent.HubEvents, package policy/agent): all of a
// cluster's transitions, where its replica's history keeps the ten newest.
type EventReconciler struct {
	events   client.Reader
	replicas client.Reader
	opts     Options
}

// Reconcile records one forwarded event, once its identity checks out
// (history.FromHubEvent): an event whose replica is not in its namespace is
// refused and not retried.
func (r *EventReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var e corev1.Event
	if err := r.events.Get(ctx, req.NamespacedName, &e); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var rep *policyv1.Policy
	if e.InvolvedObject.Namespace == e.Namespace && e.InvolvedObject.Name != "" {
		var p policyv1.Policy
		err := r.replicas.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.InvolvedObject.Name}, &p)
		switch {
		case err == nil:
			rep = &p
		case !apierrors.IsNotFound(err):
			return ctrl.Result{}, err
		}
	}
	ev, err := history.FromHubEvent(&e, rep)
	if err != nil {
		// The events of a deleted policy outlive its replicas (an Event's TTL
		// is an hour), and every start of the hub reads them all again: that
		// is routine, not news. Any other refusal (a malformed or forged
		// event) is logged at the default level.
		log := ctrl.LoggerFrom(ctx)
		if errors.Is(err, history.ErrNoReplica) {
			log = log.V(1)
		}
		log.Info("compliance event not recorded", "reason", err.Error())
		return ctrl.Result{}, nil
	}
	// The replica's checks and bounds apply as to its status's entries (so
	// that both sources give the same row): a replica in a cluster
	// namespace, a template its spec carries.
	if ok, err := (&Reconciler{Reader: r.replicas, opts: r.opts}).isReplica(ctx, rep); err != nil || !ok {
		return ctrl.Result{}, err
	}
	if !templates(rep)[ev.Template] {
		ctrl.LoggerFrom(ctx).Info("compliance event not recorded: its replica carries no such template", "template", ev.Template, "replica", rep.Name)
		return ctrl.Result{}, nil
	}
	if ev.Time.After(r.opts.Now().Add(MaxClockSkew)) {
		ctrl.LoggerFrom(ctx).Info("compliance event not recorded: ahead of the hub's clock", "time", ev.Time)
		return ctrl.Result{}, nil
	}
	// The agent forwards the events its cluster still holds (an hour by
	// Kubernetes' default --event-ttl), so a forwarded event claims a time
	// shortly before the hub Event was made (a time the apiserver sets): an
	// older claim is a backdated one, which would rewrite the past of its
	// series where no replica status could (whose entries the cluster also
	// writes, but only the ten newest).
	if made := e.CreationTimestamp.Time; !made.IsZero() && ev.Time.Before(made.Add(-MaxForwardedAge)) {
		ctrl.LoggerFrom(ctx).Info("compliance event not recorded: its time is older than the events a cluster holds", "time", ev.Time, "forwarded", made)
		return ctrl.Result{}, nil
	}
	ev.Message = clip(ev.Message)
	if r.opts.Retention > 0 && ev.Time.Before(r.opts.Now().Add(-r.opts.Retention)) {
		return ctrl.Result{}, nil
	}
	if _, err := r.opts.Store.Record(ctx, ev); err != nil {
		return ctrl.Result{}, fmt.Errorf("record the compliance event %s: %w", req, err)
	}
	return ctrl.Result{}, nil
}

// isReplica says whether p's history is a cluster's: p has a replica's shape
// (propagator.IsWellFormedReplica) and its namespace is a ManagedCluster's.
// Anyone who may write Policies and their status in some namespace could
// otherwise label one as another root's replica on another cluster and have
// its forged history recorded as theirs.
func (r *Reconciler) isReplica(ctx context.Context, p *policyv1.Policy) (bool, error) {
	if !propagator.IsWellFormedReplica(p) {
		ctrl.LoggerFrom(ctx).V(1).Info("not recorded: labelled as a replica but not shaped as one", "root", p.Labels[policyv1.RootPolicyLabel])
		return false, nil
	}
	var mc clusterv1.ManagedCluster
	if err := r.Get(ctx, client.ObjectKey{Name: p.Namespace}, &mc); err != nil {
		if apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).V(1).Info("not recorded: a replica outside a cluster namespace")
			return false, nil
		}
		return false, err
	}
	// A cluster the hub has not accepted is no cluster of the fleet: anyone
	// holding the bootstrap credential may create a ManagedCluster named
	// after a namespace they write Policies in.
	if !ocm.Accepted(&mc) {
		ctrl.LoggerFrom(ctx).Info("not recorded: the replica's cluster is not accepted", "cluster", mc.Name)
		return false, nil
	}
	return true, nil
}

// pruneLoop prunes at start and every PruneEvery; only the leader runs it.
func (r *Reconciler) pruneLoop(ctx context.Context) error {
	log := ctrl.Log.WithName("compliance-recorder")
	t := time.NewTicker(r.opts.PruneEvery)
	defer t.Stop()
	for {
		cutoff := r.opts.Now().Add(-r.opts.Retention)
		if n, err := r.opts.Store.Prune(ctx, cutoff); err != nil {
			log.Error(err, "prune the compliance history")
		} else if n > 0 {
			log.Info("compliance history pruned", "deleted", n, "before", cutoff.UTC().Format(time.RFC3339))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
