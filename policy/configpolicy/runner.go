package configpolicy

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/configpolicy/evaluate"
)

// Finalizer is set on a ConfigurationPolicy whose objects are pruned on deletion.
const Finalizer = "policy.open-cluster-management.io/delete-related-objects"

var (
	policiesGVR = policyv1.GroupVersion.WithResource("configurationpolicies")
	crdsGVR     = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// Options configure Run.
type Options struct {
	// Config reaches the cluster the engine governs. Required.
	Config *rest.Config
	// Namespace holds the ConfigurationPolicies to run. Default "" (every namespace).
	Namespace string
	// Workers is the number of policies evaluated at once. Default 4.
	Workers int
	// QPS and Burst limit the engine's requests to the apiserver (status
	// writes, events, enforce). Default 200 and 400, unless Config sets them.
	QPS   float32
	Burst int
	// Metrics receive evaluation durations, counts and compliance. Default:
	// NewMetrics(nil) (kept, not registered anywhere).
	Metrics *Metrics
	// Log receives progress and errors. Default: logr.Discard().
	Log logr.Logger
	// RetryInterval is when a policy is evaluated again after the cluster
	// could not be read or refused an action (a missing permission, an
	// unknown kind, a namespace being deleted). Default 30s.
	RetryInterval time.Duration
	// SyncTimeout bounds the wait for a new watch to sync. Default 30s.
	SyncTimeout time.Duration
	// EventSource is the component name on compliance events. Default "flotilla-policy".
	EventSource string
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Runner is a running engine. Create it with Start.
type Runner struct {
	opts    Options
	dyn     dynamic.Interface
	kube    kubernetes.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	watches *watches
	queue   workqueue.TypedRateLimitingInterface[string]
	policy  cache.SharedIndexInformer
	log     logr.Logger

	mu      sync.Mutex
	state   map[string]*policyState // by namespace/name
	unknown map[string]bool         // policies with a kind the cluster does not serve
	// created remembers what each policy created until its status says so,
	// so createdByPolicy survives a status write that failed.
	created map[string][]policyv1.RelatedObject
	// written is the resourceVersion of each policy as the engine last wrote
	// (or read) it, to detect a policy cache that is behind.
	written map[string]string
}

// policyState is what the runner remembers about a policy between evaluations.
type policyState struct {
	lastEval   time.Time
	generation int64
	compliance policyv1.ComplianceState
	// dropped is what the status left out of its related objects.
	dropped evaluate.Dropped
}

// Run runs the engine until ctx ends.
func Run(ctx context.Context, opts Options) error {
	r, err := Start(ctx, opts)
	if err != nil {
		return err
	}
	<-ctx.Done()
	r.queue.ShutDown()
	return nil
}

// Start starts the engine in the background; it stops when ctx ends. It
// returns once the ConfigurationPolicy watch has synced.
func Start(ctx context.Context, opts Options) (*Runner, error) {
	if opts.Config == nil {
		return nil, fmt.Errorf("configpolicy: Options.Config is required")
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = 30 * time.Second
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = 30 * time.Second
	}
	if opts.EventSource == "" {
		opts.EventSource = "flotilla-policy"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	cfg := rest.CopyConfig(opts.Config)
	if opts.QPS > 0 {
		cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	}
	if cfg.QPS == 0 {
		cfg.QPS = 200
	}
	if cfg.Burst < int(cfg.QPS) {
		cfg.Burst = 2 * int(cfg.QPS)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	r := &Runner{
		opts: opts, dyn: dyn, kube: kube, log: opts.Log,
		mapper:  restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		state:   map[string]*policyState{},
		unknown: map[string]bool{},
		created: map[string][]policyv1.RelatedObject{},
		written: map[string]string{},
	}
	r.watches = newWatches(ctx, dyn, opts.SyncTimeout)
	r.watches.onEvent = r.objectChanged

	if _, err := dyn.Resource(policiesGVR).Namespace(opts.Namespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return nil, fmt.Errorf("cannot list ConfigurationPolicies (is the policy CRD installed? `flotilla policy run` installs it with --install-crds): %w", err)
	}
	r.policy = dynamicinformer.NewFilteredDynamicInformer(dyn, policiesGVR, opts.Namespace, 0, cache.Indexers{}, nil).Informer()
	_ = r.policy.SetTransform(slimPolicy)
	_, _ = r.policy.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { r.enqueue(obj) },
		UpdateFunc: func(old, cur any) {
			o, err1 := meta.Accessor(old)
			c, err2 := meta.Accessor(cur)
			// Our own status writes do not re-trigger an evaluation.
			if err1 != nil || err2 != nil || o.GetGeneration() != c.GetGeneration() || c.GetDeletionTimestamp() != nil ||
				len(o.GetFinalizers()) != len(c.GetFinalizers()) || !equalMaps(o.GetLabels(), c.GetLabels()) {
				r.enqueue(cur)
			}
		},
		DeleteFunc: func(obj any) { r.enqueue(obj) },
	})
	go r.policy.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), r.policy.HasSynced) {
		return nil, fmt.Errorf("the ConfigurationPolicy watch did not sync")
	}
	// A new CRD may serve a kind that was unknown. The names are all this
	// needs: a watch of their metadata keeps no schemas in memory (a policy
	// naming CustomResourceDefinitions starts a whole watch of its own).
	if err := r.watchCRDs(ctx, cfg); err != nil {
		r.log.Info("not watching CustomResourceDefinitions; policies naming a kind that appears later are re-evaluated only on their interval", "error", err.Error())
	}
	for i := 0; i < opts.Workers; i++ {
		go r.work(ctx)
	}
	go func() { <-ctx.Done(); r.queue.ShutDown() }()
	return r, nil
}

// watchCRDs calls crdChanged when a CustomResourceDefinition is added or
// changes, from a watch of their metadata only (without managedFields and
// annotations: kubectl's last-applied-configuration holds a whole CRD).
func (r *Runner) watchCRDs(ctx context.Context, cfg *rest.Config) error {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := mc.Resource(crdsGVR).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return err
	}
	inf := metadatainformer.NewFilteredMetadataInformer(mc, crdsGVR, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	_ = inf.SetTransform(func(obj any) (any, error) {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			m.ManagedFields, m.Annotations = nil, nil
		}
		return obj, nil
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { r.crdChanged() },
		UpdateFunc: func(any, any) { r.crdChanged() },
	})
	go inf.Run(ctx.Done())
	return nil
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func (r *Runner) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	r.queue.Add(key)
}

func (r *Runner) objectChanged(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
	for _, key := range r.watches.interested(gvr, obj) {
		r.queue.Add(key)
	}
}

func (r *Runner) crdChanged() {
	r.mu.Lock()
	keys := make([]string, 0, len(r.unknown))
	for k := range r.unknown {
		keys = append(keys, k)
	}
	r.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	r.mapper.Reset()
	for _, k := range keys {
		r.queue.Add(k)
	}
}

func (r *Runner) work(ctx context.Context) {
	for {
		key, quit := r.queue.Get()
		if quit {
			return
		}
		requeue, err := r.reconcileSafely(ctx, key)
		switch {
		case errors.Is(err, errRetry):
			r.log.V(1).Info("evaluating again", "policy", key, "reason", err.Error())
			r.queue.AddRateLimited(key)
		case err != nil:
			r.log.Error(err, "evaluating ConfigurationPolicy", "policy", key)
			r.queue.AddRateLimited(key)
		default:
			r.queue.Forget(key)
			if requeue > 0 {
				r.queue.AddAfter(key, requeue)
			}
		}
		r.queue.Done(key)
	}
}

// reconcileSafely turns a panic while evaluating one policy into an error,
// so one broken policy or object never stops the engine.
func (r *Runner) reconcileSafely(ctx context.Context, key string) (requeue time.Duration, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic while evaluating (a bug; please report it with this log): %v\n%s", p, debug.Stack())
		}
	}()
	return r.reconcile(ctx, key)
}

// WatchedKinds is the number of resources the engine watches.
func (r *Runner) WatchedKinds() int { return r.watches.watchedKinds() }
