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
}

func newWatcher(client metadata.Interface, hubHash, clusterName string, events chan<- event.TypedGenericEvent[*workv1.ManifestWork], log logr.Logger) *watcher {
	return &watcher{
		factory:     metadatainformer.NewSharedInformerFactory(client, 0),
		hubHash:     hubHash,
		clusterName: clusterName,
		events:      events,
		log:         log.WithName("watch"),
		watching:    map[schema.GroupVersionResource]bool{},
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
				w.notify(n)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
				w.notify(m)
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

func (w *watcher) notify(m *metav1.PartialObjectMetadata) {
	for _, ref := range m.OwnerReferences {
		if ref.Kind != "AppliedManifestWork" || ref.APIVersion != workv1.GroupVersion.String() {
			continue
		}
		name, ok := applied.WorkName(w.hubHash, ref.Name)
		if !ok {
			continue
		}
		work := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: w.clusterName, Name: name}}
		w.mu.Lock()
		ctx := w.ctx
		w.mu.Unlock()
		if ctx == nil {
			return
		}
		select {
		case w.events <- event.TypedGenericEvent[*workv1.ManifestWork]{Object: work}:
		case <-ctx.Done(): // shutting down: nobody reads events any more
		}
	}
}
