package configpolicy

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"flotilla.dev/flotilla/policy/configpolicy/evaluate"
)

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// kindWatch is the informer of one resource, started on first use.
type kindWatch struct {
	gvr      schema.GroupVersionResource
	informer cache.SharedIndexInformer
	ready    chan struct{} // closed when synced (or failed)
	err      error
}

// interest is what a policy wants to hear about one resource.
type interest struct {
	anyName bool
	names   map[string]bool
}

// watches holds the informers and which policies care about which objects.
type watches struct {
	ctx     context.Context
	dyn     dynamic.Interface
	syncMax time.Duration
	onEvent func(gvr schema.GroupVersionResource, obj *unstructured.Unstructured)

	mu    sync.Mutex
	kinds map[schema.GroupVersionResource]*kindWatch
	// listeners index who cares about which object, so an event costs the
	// number of interested policies, not the number of policies.
	listeners map[schema.GroupVersionResource]*listeners
	// registered is what each policy key listens to (to replace it).
	registered map[string]map[schema.GroupVersionResource]*interest
}

// listeners of one resource: policies interested in every object, and in
// objects by name.
type listeners struct {
	anyName map[string]bool
	byName  map[string]map[string]bool
}

func newWatches(ctx context.Context, dyn dynamic.Interface, syncMax time.Duration) *watches {
	return &watches{ctx: ctx, dyn: dyn, syncMax: syncMax,
		kinds:      map[schema.GroupVersionResource]*kindWatch{},
		listeners:  map[schema.GroupVersionResource]*listeners{},
		registered: map[string]map[schema.GroupVersionResource]*interest{}}
}

// get returns the synced informer of gvr, starting it on first use. A
// resource the engine may not list is an error (retried on the next call).
func (w *watches) get(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, error) {
	w.mu.Lock()
	kw := w.kinds[gvr]
	if kw == nil {
		kw = &kindWatch{gvr: gvr, ready: make(chan struct{})}
		w.kinds[gvr] = kw
		go w.start(kw)
	}
	w.mu.Unlock()
	<-kw.ready
	if kw.err != nil {
		w.mu.Lock()
		if w.kinds[gvr] == kw {
			delete(w.kinds, gvr)
		}
		w.mu.Unlock()
		return nil, kw.err
	}
	return kw.informer, nil
}

func (w *watches) start(kw *kindWatch) {
	defer close(kw.ready)
	// Fail fast, with the apiserver's words, when the engine may not list the kind.
	if _, err := w.dyn.Resource(kw.gvr).List(w.ctx, metav1.ListOptions{Limit: 1}); err != nil {
		kw.err = err
		return
	}
	kw.informer = dynamicinformer.NewFilteredDynamicInformer(w.dyn, kw.gvr, metav1.NamespaceAll, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	_ = kw.informer.SetTransform(slim)
	handler := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			w.onEvent(kw.gvr, u)
		}
	}
	_, _ = kw.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: handler, DeleteFunc: handler,
		UpdateFunc: func(old, cur any) {
			o, _ := old.(*unstructured.Unstructured)
			c, _ := cur.(*unstructured.Unstructured)
			if o != nil && c != nil && o.GetResourceVersion() == c.GetResourceVersion() {
				return
			}
			handler(cur)
		},
	})
	go kw.informer.Run(w.ctx.Done())
	ctx, cancel := context.WithTimeout(w.ctx, w.syncMax)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), kw.informer.HasSynced) {
		kw.err = fmt.Errorf("the watch of %s did not sync within %s", kw.gvr.Resource, w.syncMax)
	}
}

// setInterests replaces what policy key listens to (nil: nothing).
func (w *watches) setInterests(key string, in map[schema.GroupVersionResource]*interest) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for gvr, i := range w.registered[key] {
		l := w.listeners[gvr]
		delete(l.anyName, key)
		for name := range i.names {
			delete(l.byName[name], key)
			if len(l.byName[name]) == 0 {
				delete(l.byName, name)
			}
		}
	}
	delete(w.registered, key)
	if len(in) == 0 {
		return
	}
	w.registered[key] = in
	for gvr, i := range in {
		l := w.listeners[gvr]
		if l == nil {
			l = &listeners{anyName: map[string]bool{}, byName: map[string]map[string]bool{}}
			w.listeners[gvr] = l
		}
		if i.anyName {
			l.anyName[key] = true
		}
		for name := range i.names {
			if l.byName[name] == nil {
				l.byName[name] = map[string]bool{}
			}
			l.byName[name][key] = true
		}
	}
}

// interested returns the policies that care about obj, sorted.
func (w *watches) interested(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.listeners[gvr]
	if l == nil {
		return nil
	}
	keys := make([]string, 0, len(l.anyName)+len(l.byName[obj.GetName()]))
	for key := range l.anyName {
		keys = append(keys, key)
	}
	for key := range l.byName[obj.GetName()] {
		if !l.anyName[key] {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	return keys
}

// watchedKinds is the number of informers running.
func (w *watches) watchedKinds() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.kinds)
}

// cluster is the evaluate.Cluster read from the informer caches.
type cluster struct {
	w      *watches
	mapper meta.RESTMapper
}

var _ evaluate.Cluster = (*cluster)(nil)

func (c *cluster) Mapping(gvk schema.GroupVersionKind) (evaluate.Mapping, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return evaluate.Mapping{}, &evaluate.UnknownKindError{GVK: gvk}
		}
		return evaluate.Mapping{}, fmt.Errorf("cannot resolve kind %s (apiVersion %s): %w", gvk.Kind, gvk.GroupVersion(), err)
	}
	return evaluate.Mapping{GVK: gvk, Resource: m.Resource.Resource, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}, nil
}

func (c *cluster) Get(m evaluate.Mapping, namespace, name string) (*unstructured.Unstructured, error) {
	inf, err := c.w.get(m.GVR())
	if err != nil {
		return nil, err
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, exists, err := inf.GetStore().GetByKey(key)
	if err != nil || !exists {
		return nil, err
	}
	return obj.(*unstructured.Unstructured), nil
}

func (c *cluster) List(m evaluate.Mapping, namespace string) ([]*unstructured.Unstructured, error) {
	inf, err := c.w.get(m.GVR())
	if err != nil {
		return nil, err
	}
	var items []any
	if namespace != "" {
		items, err = inf.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
		if err != nil {
			return nil, err
		}
	} else {
		items = inf.GetStore().List()
	}
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, it := range items {
		out = append(out, it.(*unstructured.Unstructured))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

func (c *cluster) Namespaces() ([]evaluate.Namespace, error) {
	inf, err := c.w.get(namespacesGVR)
	if err != nil {
		return nil, err
	}
	var out []evaluate.Namespace
	for _, it := range inf.GetStore().List() {
		u := it.(*unstructured.Unstructured)
		out = append(out, evaluate.Namespace{Name: u.GetName(), Labels: u.GetLabels(), Terminating: u.GetDeletionTimestamp() != nil})
	}
	return out, nil
}

// dynamicResource is a namespaced or cluster-wide dynamic client.
type dynamicResource = dynamic.ResourceInterface
