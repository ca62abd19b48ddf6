package propagator

import (
	"context"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// secretWatches watches the Secrets of exactly the namespaces whose Secrets
// hub templates read (fromSecret, lookup of a Secret), by metadata only, and
// only where the hub may: an administrator opts a policy namespace in by
// binding ClusterRole open-cluster-management:flotilla-hub:hub-template-secrets
// there. A change is sent on events as the Secret; the propagator maps it to
// the roots that read it (templateRefs). A namespace no root reads Secrets
// from any more is no longer watched.
type secretWatches struct {
	client metadata.Interface
	events chan event.GenericEvent

	mu      sync.Mutex
	running map[string]context.CancelFunc // namespace -> stop
	refused map[string]bool               // namespaces where list/watch is forbidden
}

func newSecretWatches(c metadata.Interface) *secretWatches {
	return &secretWatches{client: c, events: make(chan event.GenericEvent, 1024),
		running: map[string]context.CancelFunc{}, refused: map[string]bool{}}
}

// Sync watches exactly namespaces. A namespace where the hub may not list
// Secrets is tried again at the next Sync naming it (the next resolution of
// a root that reads it), and its readers fail with the apiserver's error.
func (s *secretWatches) Sync(ctx context.Context, namespaces []string) {
	if s == nil {
		return
	}
	want := map[string]bool{}
	for _, ns := range namespaces {
		want[ns] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for ns, stop := range s.running {
		if !want[ns] {
			stop()
			delete(s.running, ns)
		}
	}
	for ns := range want {
		if _, ok := s.running[ns]; ok {
			continue
		}
		_, err := s.client.Resource(secretsGVR).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			if apierrors.IsForbidden(err) && !s.refused[ns] {
				log.FromContext(ctx).Info("not watching the Secrets of a namespace hub templates read: the hub may not list them "+
					"(bind ClusterRole open-cluster-management:flotilla-hub:hub-template-secrets there)", "namespace", ns)
			}
			s.refused[ns] = apierrors.IsForbidden(err)
			continue
		}
		delete(s.refused, ns)
		wctx, stop := context.WithCancel(context.Background())
		s.running[ns] = stop
		inf := metadatainformer.NewFilteredMetadataInformer(s.client, secretsGVR, ns, 0, toolscache.Indexers{}, nil).Informer()
		send := func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			m, ok := obj.(metav1.Object)
			if !ok {
				return
			}
			ev := event.GenericEvent{Object: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.GetNamespace(), Name: m.GetName()}}}
			select {
			case s.events <- ev:
			case <-wctx.Done():
			}
		}
		_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: send, DeleteFunc: send,
			UpdateFunc: func(old, cur any) {
				o, c := old.(metav1.Object), cur.(metav1.Object)
				if o.GetResourceVersion() != c.GetResourceVersion() {
					send(cur)
				}
			},
		})
		go inf.Run(wctx.Done())
	}
}

// Watched returns the namespaces watched now, sorted (for tests and logs).
func (s *secretWatches) Watched() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.running))
	for ns := range s.running {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// Stop ends every watch.
func (s *secretWatches) Stop() {
	s.Sync(context.Background(), nil)
}

// secretNamespaces are the namespaces of the Secrets any root reads.
func (t *templateRefs) secretNamespaces() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := map[string]bool{}
	for k := range t.byRef {
		if ns, ok := secretRefNamespace(k); ok {
			seen[ns] = true
		}
	}
	out := make([]string, 0, len(seen))
	for ns := range seen {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// secretRefNamespace parses a ref key "Secret ns/name".
func secretRefNamespace(k string) (string, bool) {
	const prefix = "Secret "
	if len(k) <= len(prefix) || k[:len(prefix)] != prefix {
		return "", false
	}
	rest := k[len(prefix):]
	for i := 0; i < len(rest); i++ {
		if rest[i] == '/' {
			return rest[:i], i > 0
		}
	}
	return "", false
}
