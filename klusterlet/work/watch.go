package work

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"flotilla.dev/flotilla/klusterlet/work/applied"
)

// watcher watches the kinds of resources the agent applied (metadata only) and
// wakes up the owning ManifestWork when one of them is changed or deleted on the
// managed cluster, so drift is repaired at once rather than at the next
// periodic check. The owning work is found from the resource's owner reference
// to its AppliedManifestWork.
type watcher struct {
	factory     metadatainformer.SharedInformerFactory
	hubHash     string
	clusterName string
	events      chan<- event.TypedGenericEvent[*workv1.ManifestWork]
	log         logr.Logger

	mu       sync.Mutex
	ctx      context.Context
	watching map[schema.GroupVersionResource]bool
	// followed are objects no work owns whose changes still wake works:
	// ReadOnly manifests with feedbackScrapeType Watch.
	followed map[Followed]map[string]bool
	// follows is the reverse: the objects each work follows.
	follows map[string][]Followed
}

// Followed names an object a work reads but does not own.
type Followed struct {
	GVR             schema.GroupVersionResource
	Namespace, Name string
}

func newWatcher(client metadata.Interface, hubHash, clusterName string, events chan<- event.TypedGenericEvent[*workv1.ManifestWork], log logr.Logger) *watcher {
	return &watcher{
		factory:     metadatainformer.NewSharedInformerFactory(client, 0),
		hubHash:     hubHash,
		clusterName: clusterName,
		events:      events,
		log:         log.WithName("watch"),
		watching:    map[schema.GroupVersionResource]bool{},
		followed:    map[Followed]map[string]bool{},
		follows:     map[string][]Followed{},
	}
}

// Start runs the informers until ctx ends (manager.Runnable).
func (w *watcher) Start(ctx context.Context) error {
	w.mu.Lock()
	w.ctx = ctx
	w.factory.Start(ctx.Done())
	w.mu.Unlock()
	<-ctx.Done()
	w.factory.Shutdown()
	return nil
}

// Watch starts watching gvr unless it already is watched.
func (w *watcher) Watch(gvr schema.GroupVersionResource) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watching[gvr] {
		return
	}
	w.watching[gvr] = true
	inf := w.factory.ForResource(gvr).Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, ok1 := oldObj.(*metav1.PartialObjectMetadata)
			n, ok2 := newObj.(*metav1.PartialObjectMetadata)
			if ok1 && ok2 && o.ResourceVersion != n.ResourceVersion {
				w.notify(gvr, n)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
				w.notify(gvr, m)
			}
		},
	})
	if err != nil {
		w.log.Error(err, "cannot watch; drift of these resources is found by the periodic check", "resource", gvr.String())
		return
	}
	if w.ctx != nil {
		w.factory.Start(w.ctx.Done())
	}
}

// SetFollowed replaces the objects a work follows (none: it follows nothing),
// watching their resources.
func (w *watcher) SetFollowed(work string, objs []Followed) {
	w.mu.Lock()
	if len(objs) == 0 && len(w.follows[work]) == 0 {
		w.mu.Unlock()
		return
	}
	for _, f := range w.follows[work] {
		delete(w.followed[f], work)
		if len(w.followed[f]) == 0 {
			delete(w.followed, f)
		}
	}
	delete(w.follows, work)
	for _, f := range objs {
		if w.followed[f] == nil {
			w.followed[f] = map[string]bool{}
		}
		w.followed[f][work] = true
	}
	if len(objs) > 0 {
		w.follows[work] = objs
	}
	w.mu.Unlock()
	for _, f := range objs {
		w.Watch(f.GVR)
	}
}

func (w *watcher) notify(gvr schema.GroupVersionResource, m *metav1.PartialObjectMetadata) {
	var works []string
	for _, ref := range m.OwnerReferences {
		if ref.Kind != "AppliedManifestWork" || ref.APIVersion != workv1.GroupVersion.String() {
			continue
		}
		if name, ok := applied.WorkName(w.hubHash, ref.Name); ok {
			works = append(works, name)
		}
	}
	w.mu.Lock()
	ctx := w.ctx
	for name := range w.followed[Followed{GVR: gvr, Namespace: m.Namespace, Name: m.Name}] {
		works = append(works, name)
	}
	w.mu.Unlock()
	if ctx == nil {
		return
	}
	for _, name := range works {
		work := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: w.clusterName, Name: name}}
		select {
		case w.events <- event.TypedGenericEvent[*workv1.ManifestWork]{Object: work}:
		case <-ctx.Done(): // shutting down: nobody reads events any more
			return
		}
	}
}
