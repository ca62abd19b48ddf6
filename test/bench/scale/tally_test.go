package scale

import (
	"context"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// tally follows one kind through an informer and counts the objects for
// which ok holds, so the benchmark's waits read a watch instead of listing
// every work or replica once a second: at 5,000 clusters those lists (5,000
// works, 50,000 replicas) were most of what the hub apiserver served in their
// phases, and its memory and CPU are what the benchmark measures.
type tally struct {
	mu sync.Mutex
	ok map[string]bool // every object the informer holds: whether ok held at its last event
}

// newTally starts an informer of list's kind (opts narrow it) and returns
// once it has synced.
func newTally[T client.Object](ctx context.Context, b *testing.B, c client.WithWatch, list client.ObjectList, obj T,
	ok func(T) bool, opts ...client.ListOption) *tally {
	t := &tally{ok: map[string]bool{}}
	set := func(o any) {
		v, isT := o.(T)
		if !isT {
			return
		}
		key := v.GetNamespace() + "/" + v.GetName()
		t.mu.Lock()
		t.ok[key] = ok(v)
		t.mu.Unlock()
	}
	forget := func(o any) {
		if d, tomb := o.(cache.DeletedFinalStateUnknown); tomb {
			o = d.Obj
		}
		if v, isT := o.(T); isT {
			key := v.GetNamespace() + "/" + v.GetName()
			t.mu.Lock()
			delete(t.ok, key)
			t.mu.Unlock()
		}
	}
	listOpts := func(o metav1.ListOptions) []client.ListOption {
		return append(append([]client.ListOption{}, opts...), &client.ListOptions{Raw: &o})
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) {
			l := list.DeepCopyObject().(client.ObjectList)
			err := c.List(ctx, l, listOpts(o)...)
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), listOpts(o)...)
		},
	}
	_, inf := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: lw, ObjectType: obj,
		Handler: cache.ResourceEventHandlerFuncs{AddFunc: set, UpdateFunc: func(_, n any) { set(n) }, DeleteFunc: forget}})
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		b.Fatalf("informer of %T did not sync", list)
	}
	return t
}

// count is the number of objects for which ok held at their last event.
func (t *tally) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, y := range t.ok {
		if y {
			n++
		}
	}
	return n
}

// total is the number of objects the informer holds.
func (t *tally) total() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.ok)
}

// fleetTallies are the benchmark's views of works, roots and replicas.
type fleetTallies struct {
	applied, roots, replicas *tally
}

func watchTallies(ctx context.Context, b *testing.B, c client.WithWatch, clusters int) fleetTallies {
	return fleetTallies{
		applied: newTally(ctx, b, c, &workv1.ManifestWorkList{}, &workv1.ManifestWork{}, workApplied),
		roots: newTally(ctx, b, c, &policyv1.PolicyList{}, &policyv1.Policy{},
			func(p *policyv1.Policy) bool { return len(p.Status.Status) == clusters }, client.InNamespace(policyNS)),
		// Replicas as metadata only: the benchmark holds 50,000 at 5,000 clusters.
		replicas: newTally(ctx, b, c, replicaList(), &metav1.PartialObjectMetadata{},
			func(*metav1.PartialObjectMetadata) bool { return true }, client.HasLabels{policyv1.RootPolicyLabel}),
	}
}

func replicaList() *metav1.PartialObjectMetadataList {
	var l metav1.PartialObjectMetadataList
	l.SetGroupVersionKind(policyv1.GroupVersion.WithKind("PolicyList"))
	return &l
}
