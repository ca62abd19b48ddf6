// Package agent is the search addon's agent on a managed cluster: it
// watches the configured resources and keeps the hub's search index
// (search/apigroup's syncs) equal to them. After a start, a restart or a
// failed post it compares digests first (api/search/v1alpha1 ModeCheck), so
// a resource the hub already holds is not sent again, and a resource that
// differs costs only its difference. Between checks it sends changes,
// batched every FlushInterval. Secrets are watched as metadata only.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

	searchv1alpha1 "flotilla.dev/flotilla/api/search/v1alpha1"
	"flotilla.dev/flotilla/internal/addonagent"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/search/object"
	"flotilla.dev/flotilla/search/searchapi"
)

// Options configure the agent. Every field documents its default.
type Options struct {
	// SpokeConfig reaches the managed cluster. Required.
	SpokeConfig *rest.Config
	// ClusterName is the managed cluster's name on the hub. Required.
	ClusterName string
	// Namespace is the install namespace (Lease, hub credential Secret).
	// Default open-cluster-management-agent-addon.
	Namespace string
	// Resources are watched ("pods", "deployments.apps", ...). Default
	// DefaultResources.
	Resources []string
	// FlushInterval is how long changes gather before they are sent.
	// Default 200ms.
	FlushInterval time.Duration
	// ResyncInterval is how often every resource's digest is compared with
	// the hub's again. Default 10 minutes.
	ResyncInterval time.Duration
	// BatchObjects bounds the objects of one post. Default 500.
	BatchObjects int
	// LeaseDuration written on the Lease, renewed every fifth of it. Default 60s.
	LeaseDuration time.Duration
	// CredentialInterval is how often the hub credential Secret is read
	// again. Default 5s.
	CredentialInterval time.Duration
	// Log receives progress and errors. Default: discard.
	Log logr.Logger
}

func (o *Options) defaults() error {
	if o.SpokeConfig == nil || o.ClusterName == "" {
		return errors.New("search agent: SpokeConfig and ClusterName are required")
	}
	if o.Namespace == "" {
		o.Namespace = ocm.DefaultAddonInstallNamespace
	}
	if len(o.Resources) == 0 {
		o.Resources = DefaultResources
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 200 * time.Millisecond
	}
	if o.ResyncInterval <= 0 {
		o.ResyncInterval = 10 * time.Minute
	}
	if o.BatchObjects <= 0 {
		o.BatchObjects = 500
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 60 * time.Second
	}
	if o.CredentialInterval <= 0 {
		o.CredentialInterval = 5 * time.Second
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	o.Log = o.Log.WithValues("addon", ocm.SearchAddon, "cluster", o.ClusterName)
	return nil
}

// Run runs the agent until ctx ends: with the addon's hub credential (and
// Lease), it syncs (Sync).
func Run(ctx context.Context, o Options) error {
	if err := o.defaults(); err != nil {
		return err
	}
	spoke, err := kubernetes.NewForConfig(o.SpokeConfig)
	if err != nil {
		return err
	}
	return addonagent.Run(ctx, addonagent.RunOptions{Spoke: spoke, Addon: ocm.SearchAddon, Namespace: o.Namespace,
		LeaseDuration: o.LeaseDuration, CredentialInterval: o.CredentialInterval, Log: o.Log},
		func(ctx context.Context, hub *rest.Config) error {
			// A post that hangs (a connection cut by a partition that drops
			// packets) gives up and is retried, instead of waiting for the
			// connection's health check.
			hub = rest.CopyConfig(hub)
			if hub.Timeout == 0 {
				hub.Timeout = PostTimeout
			}
			c, err := searchapi.NewClient(hub)
			if err != nil {
				return err
			}
			return Sync(ctx, o, c)
		})
}

// PostTimeout bounds one post to the hub.
const PostTimeout = 30 * time.Second

// Poster posts Syncs (searchapi.Client).
type Poster interface {
	Sync(ctx context.Context, cluster string, s *searchv1alpha1.Sync) (*searchv1alpha1.SyncResult, error)
}

// Sync keeps the hub's index of o.ClusterName equal to the cluster's
// objects until ctx ends.
func Sync(ctx context.Context, o Options, hub Poster) error {
	if err := o.defaults(); err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(o.SpokeConfig)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	found, missing, err := resolve(mapper, o.Resources)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		o.Log.Info("not watching resources the cluster does not serve", "resources", strings.Join(missing, ","))
	}
	dyn, err := dynamic.NewForConfig(o.SpokeConfig)
	if err != nil {
		return err
	}
	md, err := metadata.NewForConfig(o.SpokeConfig)
	if err != nil {
		return err
	}
	s := &syncer{o: o, hub: hub, pending: map[schema.GroupResource]map[string]*unstructured.Unstructured{}, check: map[schema.GroupResource]bool{},
		wake: make(chan struct{}, 1)}
	dynFactory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	mdFactory := metadatainformer.NewSharedInformerFactory(md, 0)
	for _, r := range found {
		var inf cache.SharedIndexInformer
		if r.metadataOnly {
			inf = mdFactory.ForResource(r.gvr).Informer()
		} else {
			inf = dynFactory.ForResource(r.gvr).Informer()
		}
		// Kept as the hub will: what is not sent is not held either.
		if err := inf.SetTransform(transform(r)); err != nil {
			return err
		}
		w := &watched{resource: r, store: inf.GetStore()}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.changed(w, obj, false) },
			UpdateFunc: func(_, obj any) { s.changed(w, obj, false) },
			DeleteFunc: func(obj any) { s.changed(w, obj, true) },
		}); err != nil {
			return err
		}
		s.watched = append(s.watched, w)
		s.check[r.gvr.GroupResource()] = true
	}
	dynFactory.Start(ctx.Done())
	mdFactory.Start(ctx.Done())
	start := time.Now()
	for gvr, ok := range dynFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("list %s: the cache did not sync", gvr)
		}
	}
	for gvr, ok := range mdFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("list %s: the cache did not sync", gvr)
		}
	}
	o.Log.Info("watching", "resources", len(found), "listed", time.Since(start).Round(time.Millisecond).String())
	return s.loop(ctx)
}

// transform turns an informer's object into what the hub keeps: sanitized,
// and Secrets as metadata with their kind.
func transform(r resource) cache.TransformFunc {
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *unstructured.Unstructured:
			return object.Sanitize(o), nil
		case *metav1.PartialObjectMetadata:
			m := o.ObjectMeta.DeepCopy()
			m.ManagedFields = nil
			raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(m)
			if err != nil {
				return nil, err
			}
			u := &unstructured.Unstructured{Object: map[string]any{"metadata": raw}}
			u.SetAPIVersion(r.gvr.GroupVersion().String())
			u.SetKind(r.kind)
			return object.Sanitize(u), nil
		}
		return obj, nil // a DeletedFinalStateUnknown tombstone
	}
}

type watched struct {
	resource
	store cache.Store
}

type syncer struct {
	o       Options
	hub     Poster
	watched []*watched

	mu sync.Mutex
	// pending are the changes not yet sent, by resource and UID (nil: deleted).
	pending map[schema.GroupResource]map[string]*unstructured.Unstructured
	// check marks the resources whose digests are compared next.
	check map[schema.GroupResource]bool
	wake  chan struct{}
	// epoch is the hub index's, as last answered.
	epoch string
}

// post sends one Sync; an answer from another index epoch than the last
// marks every resource for a check.
func (s *syncer) post(ctx context.Context, req *searchv1alpha1.Sync) (*searchv1alpha1.SyncResult, error) {
	res, err := s.hub.Sync(ctx, s.o.ClusterName, req)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.epoch != "" && res.Epoch != s.epoch {
		s.o.Log.Info("the hub's index changed; comparing digests again", "epoch", res.Epoch)
		for _, w := range s.watched {
			s.check[w.gvr.GroupResource()] = true
		}
	}
	s.epoch = res.Epoch
	s.mu.Unlock()
	return res, nil
}

func (s *syncer) changed(w *watched, obj any, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = t.Obj, true
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	gr := w.gvr.GroupResource()
	s.mu.Lock()
	p := s.pending[gr]
	if p == nil {
		p = map[string]*unstructured.Unstructured{}
		s.pending[gr] = p
	}
	if deleted {
		p[string(u.GetUID())] = nil
	} else {
		p[string(u.GetUID())] = u
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop sends what changed, every FlushInterval at most, checks digests
// when asked (start, failure, ResyncInterval), and backs off after a
// failed post (1 s doubling to 30 s).
func (s *syncer) loop(ctx context.Context) error {
	resync := time.NewTicker(s.o.ResyncInterval)
	defer resync.Stop()
	backoff := time.Duration(0)
	for {
		err := s.round(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			backoff = min(max(2*backoff, time.Second), 30*time.Second)
			s.o.Log.Error(err, "sync with the hub; trying again", "in", backoff.String())
			s.mu.Lock()
			for _, w := range s.watched {
				s.check[w.gvr.GroupResource()] = true
			}
			s.mu.Unlock()
		default:
			backoff = 0
		}
		wait := s.o.FlushInterval
		if backoff > 0 {
			wait = backoff
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		s.mu.Lock()
		checks := len(s.check) > 0
		s.mu.Unlock()
		if backoff > 0 || checks {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-resync.C:
			s.mu.Lock()
			for _, w := range s.watched {
				s.check[w.gvr.GroupResource()] = true
			}
			s.mu.Unlock()
		case <-s.wake:
		}
	}
}

// round runs the checks asked for, then sends the pending changes.
func (s *syncer) round(ctx context.Context) error {
	s.mu.Lock()
	var checks []*watched
	for _, w := range s.watched {
		if s.check[w.gvr.GroupResource()] {
			checks = append(checks, w)
		}
	}
	s.mu.Unlock()
	if len(checks) > 0 {
		if err := s.checkDigests(ctx, checks); err != nil {
			return err
		}
	}
	s.mu.Lock()
	pending := s.pending
	s.pending = map[schema.GroupResource]map[string]*unstructured.Unstructured{}
	s.mu.Unlock()
	if err := s.send(ctx, pending); err != nil {
		s.mu.Lock()
		for gr, p := range pending { // what changed since stays newer
			if s.pending[gr] == nil {
				s.pending[gr] = map[string]*unstructured.Unstructured{}
			}
			for uid, u := range p {
				if _, newer := s.pending[gr][uid]; !newer {
					s.pending[gr][uid] = u
				}
			}
		}
		s.mu.Unlock()
		return err
	}
	return nil
}

// checkDigests compares the digests of ws with the hub's, and sends the
// difference where they differ. The pending changes of ws are dropped in
// the same step as their store is read: the difference covers them.
func (s *syncer) checkDigests(ctx context.Context, ws []*watched) error {
	snap := map[schema.GroupResource]map[string]*unstructured.Unstructured{}
	req := &searchv1alpha1.Sync{}
	s.mu.Lock()
	for _, w := range ws {
		gr := w.gvr.GroupResource()
		objs := map[string]*unstructured.Unstructured{}
		versions := map[string]string{}
		for _, obj := range w.store.List() {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				objs[string(u.GetUID())] = u
				versions[string(u.GetUID())] = u.GetResourceVersion()
			}
		}
		snap[gr] = objs
		delete(s.pending, gr)
		req.Resources = append(req.Resources, w.entry(searchv1alpha1.ModeCheck, object.Digest(versions)))
	}
	s.mu.Unlock()
	res, err := s.post(ctx, req)
	if err != nil {
		s.requeue(ws)
		return err
	}
	diff := map[schema.GroupResource]map[string]*unstructured.Unstructured{}
	for i, w := range ws {
		gr := w.gvr.GroupResource()
		if res.Resources[i].InSync {
			continue
		}
		d := map[string]*unstructured.Unstructured{}
		for uid, u := range snap[gr] {
			if rv, ok := res.Resources[i].Have[uid]; !ok || rv != u.GetResourceVersion() {
				d[uid] = u
			}
		}
		for uid := range res.Resources[i].Have {
			if _, ok := snap[gr][uid]; !ok {
				d[uid] = nil
			}
		}
		diff[gr] = d
	}
	if err := s.send(ctx, diff); err != nil {
		s.requeue(ws)
		return err
	}
	s.mu.Lock()
	for _, w := range ws {
		delete(s.check, w.gvr.GroupResource())
	}
	s.mu.Unlock()
	return nil
}

// requeue keeps ws checked next round; their pending changes were dropped
// for the check, which the next check covers.
func (s *syncer) requeue(ws []*watched) {
	s.mu.Lock()
	for _, w := range ws {
		s.check[w.gvr.GroupResource()] = true
	}
	s.mu.Unlock()
}

func (w *watched) entry(mode searchv1alpha1.Mode, digest string) searchv1alpha1.ResourceSync {
	return searchv1alpha1.ResourceSync{Group: w.gvr.Group, Version: w.gvr.Version, Resource: w.gvr.Resource, Kind: w.kind,
		Namespaced: w.namespaced, Mode: mode, Digest: digest}
}

// maxPostBytes bounds the objects of one post (the hub takes up to
// searchapi.MaxSyncBytes).
const maxPostBytes = 6 << 20

// send posts changes as Deltas of at most BatchObjects objects (and
// maxPostBytes) each; an object bigger than object.MaxBytes is cut as the
// hub would (object.Fit).
func (s *syncer) send(ctx context.Context, changes map[schema.GroupResource]map[string]*unstructured.Unstructured) error {
	var batch searchv1alpha1.Sync
	n, size := 0, 0
	flush := func() error {
		if len(batch.Resources) == 0 {
			return nil
		}
		_, err := s.post(ctx, &batch)
		batch, n, size = searchv1alpha1.Sync{}, 0, 0
		return err
	}
	for _, w := range s.watched {
		p := changes[w.gvr.GroupResource()]
		if len(p) == 0 {
			continue
		}
		uids := make([]string, 0, len(p))
		for uid := range p {
			uids = append(uids, uid)
		}
		sort.Strings(uids)
		var e *searchv1alpha1.ResourceSync
		for _, uid := range uids {
			if e == nil {
				batch.Resources = append(batch.Resources, w.entry(searchv1alpha1.ModeDelta, ""))
				e = &batch.Resources[len(batch.Resources)-1]
			}
			if u := p[uid]; u == nil {
				e.Deletes = append(e.Deletes, uid)
			} else {
				raw, err := json.Marshal(u.Object)
				if err != nil {
					return fmt.Errorf("%s %s/%s: %w", w.kind, u.GetNamespace(), u.GetName(), err)
				}
				if len(raw) > object.MaxBytes {
					raw, err = object.Fit(u.DeepCopy()) // the cache's copy stays whole
				}
				if err != nil {
					// Its metadata alone is too big for the index: the
					// others are sent all the same.
					s.o.Log.Error(err, "not sending an object the hub's index would refuse", "kind", w.kind, "namespace", u.GetNamespace(), "name", u.GetName())
					continue
				}
				e.Upserts = append(e.Upserts, raw)
				size += len(raw)
			}
			if n++; n >= s.o.BatchObjects || size >= maxPostBytes || len(batch.Resources) >= searchapi.MaxSyncResources {
				if err := flush(); err != nil {
					return err
				}
				e = nil
			}
		}
	}
	return flush()
}
