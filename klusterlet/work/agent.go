package work

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"flotilla.dev/flotilla/internal/tolerant"
	"flotilla.dev/flotilla/klusterlet/work/applied"
	"flotilla.dev/flotilla/klusterlet/work/apply"
	"flotilla.dev/flotilla/klusterlet/work/conflict"
	"flotilla.dev/flotilla/klusterlet/work/executor"
)

// Options configures the work agent. Every field documents its default.
type Options struct {
	// HubConfig is the cluster's own hub credential (from registration).
	// Required. It needs get/list/watch/update on manifestworks and update on
	// manifestworks/status in the namespace ClusterName, nothing else.
	HubConfig *rest.Config
	// SpokeConfig reaches the managed cluster the agent applies manifests to.
	// Required.
	SpokeConfig *rest.Config
	// ClusterName is the managed cluster's name, which is also its hub namespace.
	// Required.
	ClusterName string
	// AgentID identifies this agent in AppliedManifestWorks. Default: ClusterName.
	AgentID string
	// StatusSyncInterval is how often status and drift are re-checked. Default 10s.
	StatusSyncInterval time.Duration
	// AppliedWorkEvictionGracePeriod is how long an AppliedManifestWork whose
	// ManifestWork is gone is kept before its resources are removed. Default 60m.
	AppliedWorkEvictionGracePeriod time.Duration
	// Workers is the number of ManifestWorks reconciled at once. Default 16:
	// a reconcile mostly waits on apiserver round trips, so workers cost
	// little, and fewer leave a burst of works queueing behind each other
	// (test/bench/work: 4 workers kept 100 new works per cluster waiting
	// 1.7 s at p50 for a worker). The load on the apiservers is bounded by
	// the clients' rate limit (100 QPS, burst 200 each), not by this.
	Workers int
	// CleanupOnly, when it returns true, makes the agent apply nothing: it only
	// finishes the deletion of works being deleted (the cluster itself is being
	// deleted, and its works with it). Default nil: deliver everything.
	CleanupOnly func() bool
	// Tracer, when set, is told when each work passes a Stage (benchmarks use
	// it for a per-work timeline). Default nil: no tracing.
	Tracer Tracer
}

func (o Options) withDefaults() (Options, error) {
	var errs []error
	if o.HubConfig == nil {
		errs = append(errs, errors.New("HubConfig is required"))
	}
	if o.SpokeConfig == nil {
		errs = append(errs, errors.New("SpokeConfig is required"))
	}
	if o.ClusterName == "" {
		errs = append(errs, errors.New("ClusterName is required"))
	}
	if o.AgentID == "" {
		o.AgentID = o.ClusterName
	}
	if o.StatusSyncInterval <= 0 {
		o.StatusSyncInterval = 10 * time.Second
	}
	if o.AppliedWorkEvictionGracePeriod <= 0 {
		o.AppliedWorkEvictionGracePeriod = 60 * time.Minute
	}
	if o.Workers <= 0 {
		o.Workers = 16
	}
	return o, errors.Join(errs...)
}

// Run runs the work agent until ctx ends.
//
// CONTRACT (the klusterlet in klusterlet/ calls this): keep this signature.
func Run(ctx context.Context, opts Options) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return fmt.Errorf("work agent: %w", err)
	}
	mgr, err := newManager(ctx, opts)
	if err != nil {
		return fmt.Errorf("work agent for cluster %s: %w", opts.ClusterName, err)
	}
	return mgr.Start(ctx)
}

func withRate(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS = 100
	}
	if cfg.Burst == 0 {
		cfg.Burst = 200
	}
	return cfg
}

func newManager(ctx context.Context, opts Options) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	if err := workv1.Install(scheme); err != nil {
		return nil, err
	}
	logger := log.FromContext(ctx).WithValues("cluster", opts.ClusterName)
	hubCfg, spokeCfg := withRate(opts.HubConfig), withRate(opts.SpokeConfig)
	// One undecodable ManifestWork or AppliedManifestWork must not stop the
	// agent's informers: skip it, log it once, and say so in an Event.
	// (Two filters: Events about hub objects go to the hub, and only there.)
	hubSkip, err := tolerant.New(tolerant.Options{Scheme: scheme, Log: logger.WithName("undecodable")})
	if err != nil {
		return nil, err
	}
	spokeSkip, err := tolerant.New(tolerant.Options{Scheme: scheme, Log: logger.WithName("undecodable-on-cluster")})
	if err != nil {
		return nil, err
	}
	hubCfg, spokeCfg = hubSkip.Wrap(hubCfg), spokeSkip.Wrap(spokeCfg)

	// The hub credential may only read its own namespace: the cache watches
	// ManifestWorks there and nowhere else.
	mgr, err := ctrl.NewManager(hubCfg, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 logger,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{opts.ClusterName: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	hubSkip.SetReporter(tolerant.EventReporter(mgr.GetEventRecorder("work-agent")))
	spoke, err := cluster.New(spokeCfg, func(o *cluster.Options) { o.Scheme = scheme; o.Logger = logger })
	if err != nil {
		return nil, fmt.Errorf("managed cluster client: %w", err)
	}
	if err := mgr.Add(spoke); err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(spokeCfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(spokeCfg)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(spokeCfg)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationclient.NewForConfig(spokeCfg)
	if err != nil {
		return nil, err
	}

	hubHash := applied.HubHash(hubCfg.Host)
	events := make(chan event.TypedGenericEvent[*workv1.ManifestWork], 1024)
	w := newWatcher(meta, hubHash, opts.ClusterName, events, logger)
	if err := mgr.Add(w); err != nil {
		return nil, err
	}
	r := &reconciler{
		hub:              mgr.GetClient(),
		spoke:            spoke.GetClient(),
		spokeReader:      spoke.GetAPIReader(),
		applier:          &apply.Applier{Client: dyn, Mapper: apply.NewMapper(disc)},
		executors:        &executor.Authorizer{Reviews: authz.SubjectAccessReviews(), Config: spokeCfg},
		executorAppliers: map[string]*apply.Applier{},
		watcher:          w,
		recorder:         mgr.GetEventRecorder("work-agent"),
		clusterName:      opts.ClusterName,
		agentID:          opts.AgentID,
		hubHash:          hubHash,
		resync:           opts.StatusSyncInterval,
		written:          map[string]string{},
		failures:         map[string]int{},
		cleanupOnly:      opts.CleanupOnly,
		claims:           conflict.NewRegistry(),
		events:           events,
		tracer:           opts.Tracer,
	}
	workPredicates := []predicate.Predicate{predicate.GenerationChangedPredicate{}}
	if opts.Tracer != nil {
		workPredicates = append([]predicate.Predicate{traceEvents(opts.Tracer)}, workPredicates...)
	}
	// The classic work queue, not controller-runtime's priority queue: with
	// v0.23.3 the priority queue can deadlock at shutdown under load (its
	// dispatcher holds the queue lock while handing an item to a worker that
	// already left; kubernetes-sigs/controller-runtime#3538), and the agent
	// must stop promptly when the klusterlet restarts it.
	skip, priorityQueue := true, false
	err = ctrl.NewControllerManagedBy(mgr).
		Named("manifestwork-"+opts.ClusterName).
		For(&workv1.ManifestWork{}, builder.WithPredicates(workPredicates...)).
		WatchesRawSource(source.TypedKind(spoke.GetCache(), &workv1.AppliedManifestWork{},
			handler.TypedEnqueueRequestsFromMapFunc(r.workForApplied), recordRemoved)).
		WatchesRawSource(source.Channel(events, &handler.TypedEnqueueRequestForObject[*workv1.ManifestWork]{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Workers, SkipNameValidation: &skip, UsePriorityQueue: &priorityQueue}).
		Complete(r)
	if err != nil {
		return nil, err
	}
	ev := &evictor{
		hub:         mgr.GetClient(),
		hubReader:   mgr.GetAPIReader(),
		spoke:       spoke.GetClient(),
		applier:     r.applier,
		clusterName: opts.ClusterName,
		agentID:     opts.AgentID,
		hubHash:     hubHash,
		grace:       opts.AppliedWorkEvictionGracePeriod,
		log:         logger.WithName("eviction"),
	}
	if err := mgr.Add(ev); err != nil {
		return nil, err
	}
	return mgr, nil
}

// recordRemoved lets through only the AppliedManifestWork events the reconciler
// must act on: the record being deleted (by someone else) or gone. Its own
// status writes are not news.
var recordRemoved = predicate.TypedFuncs[*workv1.AppliedManifestWork]{
	CreateFunc: func(event.TypedCreateEvent[*workv1.AppliedManifestWork]) bool { return false },
	UpdateFunc: func(e event.TypedUpdateEvent[*workv1.AppliedManifestWork]) bool {
		return e.ObjectOld.DeletionTimestamp == nil && e.ObjectNew.DeletionTimestamp != nil
	},
	DeleteFunc:  func(event.TypedDeleteEvent[*workv1.AppliedManifestWork]) bool { return true },
	GenericFunc: func(event.TypedGenericEvent[*workv1.AppliedManifestWork]) bool { return false },
}
