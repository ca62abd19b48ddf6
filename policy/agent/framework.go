package agent

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/internal/watchguard"
)

// PolicyLabel on a template names the replica policy that carries it.
const PolicyLabel = policyv1.GroupName + "/policy"

// RunFramework runs the governance-policy-framework agent until ctx ends.
// With its own hub credential it watches the replicas in its cluster's
// namespace on the hub and, on the managed cluster:
//   - spec sync: keeps a copy of each replica in the same-named namespace
//     (created if missing), and removes copies whose replica is gone;
//   - template sync: creates, updates and removes the ConfigurationPolicies
//     a replica carries (owned by the copy, labelled PolicyLabel, with the
//     replica's remediationAction winning); a template whose dependencies
//     are not met is not created and reports Pending;
//   - status sync: writes the replica's status (details with the compliance
//     events as history, newest first, at most MaxHistory; compliant) on the
//     copy and on the hub replica, and forwards every compliance event to
//     the hub as an event on the replica (HubEvents), so that the hub's
//     history misses none however many come between two of its looks.
//
// Everything is driven by watches on both sides.
func RunFramework(ctx context.Context, o Options) error {
	if err := o.defaults(ocm.PolicyFrameworkAddon); err != nil {
		return err
	}
	return runWithCredential(ctx, ocm.PolicyFrameworkAddon, o, func(ctx context.Context, hubCfg *rest.Config) error {
		// Its caches follow the replicas on both sides: a watch that died
		// on either starts the agent again, listed afresh. The guards read
		// the caches' own watches (no watch of their own).
		hubGuard, hub := watchguard.NewTracker("hub", hubCfg, 0)
		spokeGuard, spoke := watchguard.NewTracker("cluster", o.SpokeConfig, 0)
		tracked := o
		tracked.SpokeConfig = spoke
		return watchguard.Run(ctx, o.Log, []watchguard.Sign{hubGuard, spokeGuard}, func(ctx context.Context) error {
			return runFramework(ctx, tracked, hub)
		})
	})
}

// syncer reconciles one replica, named by the request, in the cluster
// namespace on both sides: spec sync, template sync, status sync.
type syncer struct {
	o            Options
	ns           string
	hub, spoke   client.Client     // writes, and reads the caches do not hold
	hubC, spokeC cache.Cache       // reads
	dyn          dynamic.Interface // the managed cluster's, for Gatekeeper objects
	// controller takes the watches of Gatekeeper resources as policies bring
	// them (watchGatekeeper).
	controller controller.Controller
	// stop ends with the agent's run: the Gatekeeper informers stop with it.
	stop <-chan struct{}

	// The controller runs one worker (MaxConcurrentReconciles 1): the maps
	// below are the worker's alone.

	// gkInformers watch the delivered Gatekeeper objects.
	gkInformers map[schema.GroupVersionResource]toolscache.SharedIndexInformer
	// lagging: since when a policy's template state has been ahead of its
	// compliance events.
	lagging map[string]time.Time
	// forwarded: per policy, the names of the hub events already forwarded
	// that the managed cluster still holds.
	forwarded map[string]map[string]bool
}

// maxEventLag is how long status sync waits for the compliance event that
// follows a template's new state before writing the status anyway.
const maxEventLag = 10 * time.Second

// conflictRetry is how soon a replica is synced again after a write lost to
// another writer (a cache behind the apiserver).
const conflictRetry = 20 * time.Millisecond

// runFramework runs one life of the agent: a manager on the managed cluster
// with the hub beside it as a cluster.Cluster, both caching the cluster
// namespace only, and one controller keyed by replica name.
func runFramework(ctx context.Context, o Options, hubCfg *rest.Config) error {
	s := scheme.New()
	ns := o.ClusterName
	// The caches' watches get no client timeout: an http.Client timeout
	// ends every watch when it runs out. The writes do (on the hub).
	one := cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}
	mgr, err := ctrl.NewManager(o.SpokeConfig, ctrl.Options{
		Scheme: s, Logger: o.Log, Cache: one,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	hubCluster, err := cluster.New(hubCfg, func(c *cluster.Options) { c.Scheme, c.Logger, c.Cache = s, o.Log, one })
	if err != nil {
		return err
	}
	if err := mgr.Add(hubCluster); err != nil {
		return err
	}
	writeCfg := rest.CopyConfig(hubCfg)
	writeCfg.Timeout = 15 * time.Second
	hub, err := client.New(writeCfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	spoke, err := client.New(o.SpokeConfig, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(o.SpokeConfig)
	if err != nil {
		return err
	}
	y := &syncer{o: o, ns: ns, hub: hub, spoke: spoke, hubC: hubCluster.GetCache(), spokeC: mgr.GetCache(), dyn: dyn,
		gkInformers: map[schema.GroupVersionResource]toolscache.SharedIndexInformer{},
		lagging:     map[string]time.Time{}, forwarded: map[string]map[string]bool{}, stop: ctx.Done()}
	if y.controller, err = y.setup(mgr, hubCluster); err != nil {
		return err
	}
	o.Log.Info("syncing policies", "namespace", ns)
	return mgr.Start(ctx)
}

// setup builds the controller: every watch maps an object to the replicas it
// concerns. The initial lists bring every replica known on either side, so a
// copy whose replica went while the agent was away is removed.
func (y *syncer) setup(mgr ctrl.Manager, hubCluster cluster.Cluster) (controller.Controller, error) {
	// Names are checked once per process; the agent restarts (credential
	// rotation, watchguard) and tests run one per cluster.
	skip := true
	// The classic work queue, as the work agent's (klusterlet/work): the
	// priority queue of v0.23.3 can deadlock at shutdown, and the agent
	// restarts.
	priorityQueue := false
	b := builder.ControllerManagedBy(mgr)
	// The templates of engine kinds the cluster serves when the agent starts
	// (their CRDs come with the config-policy-controller addon); their
	// compliance events bring the replica back in any case.
	for _, gvk := range EngineKinds {
		if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			y.o.Log.Info("not watching a policy kind the cluster does not serve", "kind", gvk.Kind, "reason", err.Error())
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		b = b.WatchesRawSource(source.Kind[client.Object](y.spokeC, u, handler.EnqueueRequestsFromMapFunc(y.engineTemplateChanged)))
	}
	return b.
		Named(ocm.PolicyFrameworkAddon + "-" + y.ns).
		// The replica itself.
		WatchesRawSource(source.Kind(hubCluster.GetCache(), &policyv1.Policy{}, &handler.TypedEnqueueRequestForObject[*policyv1.Policy]{})).
		// Its copy; and a policy on the managed cluster may be another's
		// dependency: look at all.
		WatchesRawSource(source.Kind(y.spokeC, &policyv1.Policy{}, handler.TypedEnqueueRequestsFromMapFunc(y.copyChanged))).
		WatchesRawSource(source.Kind(y.spokeC, &policyv1.ConfigurationPolicy{}, handler.TypedEnqueueRequestsFromMapFunc(y.templateChanged))).
		WatchesRawSource(source.Kind(y.spokeC, &corev1.Event{}, handler.TypedEnqueueRequestsFromMapFunc(y.eventRecorded))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, SkipNameValidation: &skip, UsePriorityQueue: &priorityQueue}).
		Build(y)
}

func (y *syncer) requests(names ...string) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(names))
	for _, n := range names {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: y.ns, Name: n}})
	}
	return out
}

// copyChanged: the copy's replica, and every other (a dependency).
func (y *syncer) copyChanged(ctx context.Context, p *policyv1.Policy) []reconcile.Request {
	return y.requests(y.allReplicas(ctx, []string{p.Name})...)
}

// templateChanged: the replica the template's PolicyLabel names; without
// one, maybe another template's dependency: every replica.
func (y *syncer) templateChanged(ctx context.Context, t *policyv1.ConfigurationPolicy) []reconcile.Request {
	if p := t.Labels[PolicyLabel]; p != "" {
		return y.requests(p)
	}
	return y.requests(y.allReplicas(ctx, nil)...)
}

// engineTemplateChanged: the replica an engine-kind template's PolicyLabel names.
func (y *syncer) engineTemplateChanged(_ context.Context, t client.Object) []reconcile.Request {
	if p := t.GetLabels()[PolicyLabel]; p != "" {
		return y.requests(p)
	}
	return nil
}

// eventRecorded: the policy a compliance event is about.
func (y *syncer) eventRecorded(_ context.Context, e *corev1.Event) []reconcile.Request {
	if e.InvolvedObject.Kind == "Policy" && strings.HasPrefix(e.Reason, "policy: ") {
		return y.requests(e.InvolvedObject.Name)
	}
	return nil
}

// allReplicas is every replica name known on either side, plus extra.
func (y *syncer) allReplicas(ctx context.Context, extra []string) []string {
	keys := append([]string(nil), extra...)
	for _, c := range []cache.Cache{y.hubC, y.spokeC} {
		var l policyv1.PolicyList
		if err := c.List(ctx, &l, client.InNamespace(y.ns)); err == nil {
			for _, p := range l.Items {
				keys = append(keys, p.Name)
			}
		}
	}
	return keys
}

// Reconcile: get the replica (gone: remove its copy), spec sync, template
// sync, status sync.
func (y *syncer) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := y.sync(ctx, req.Name)
	switch {
	case err != nil && ctx.Err() != nil:
		return reconcile.Result{}, nil // the run is ending: its requests fail, quietly
	case apierrors.IsConflict(err):
		y.o.Log.V(1).Info("sync policy again: it changed meanwhile", "policy", req.Name)
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	return res, err
}

func (y *syncer) sync(ctx context.Context, name string) (reconcile.Result, error) {
	var rep policyv1.Policy
	err := y.hubC.Get(ctx, client.ObjectKey{Namespace: y.ns, Name: name}, &rep)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, y.remove(ctx, name)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if _, ok := rep.Labels[policyv1.RootPolicyLabel]; !ok {
		return reconcile.Result{}, nil // not a replica
	}
	local, err := y.specSync(ctx, &rep)
	if err != nil {
		return reconcile.Result{}, err
	}
	states, retry, err := y.templateSync(ctx, &rep, local)
	if err != nil {
		return reconcile.Result{}, err
	}
	wait, err := y.statusSync(ctx, &rep, local, states)
	if err != nil {
		return reconcile.Result{}, err // retried with backoff
	}
	return reconcile.Result{RequeueAfter: sooner(retry, wait)}, nil
}

// sooner is the earlier of two requeue delays, 0 meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}
