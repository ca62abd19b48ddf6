package benchutil

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WaitWatch reads obj (its namespace and name set) and returns once ok holds
// for it, following its changes with a watch (list is the kind's list type),
// so a latency measured around it is the apiserver's event, not a polling
// period. It fails b after timeout.
func WaitWatch[T client.Object](b testing.TB, c client.WithWatch, list client.ObjectList, obj T, ok func(T) bool, timeout time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	key := client.ObjectKeyFromObject(obj)
	for {
		if err := c.Get(ctx, key, obj); err == nil && ok(obj) {
			return
		} else if ctx.Err() != nil {
			b.Fatalf("%s not as wanted within %s", key, timeout)
		}
		w, err := c.Watch(ctx, list, client.InNamespace(key.Namespace), client.MatchingFields{"metadata.name": key.Name},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: obj.GetResourceVersion()}})
		if err != nil {
			if ctx.Err() != nil {
				b.Fatalf("%s not as wanted within %s: %v", key, timeout, err)
			}
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			if got, isT := ev.Object.(T); isT && ok(got) {
				w.Stop()
				return
			}
		}
		w.Stop() // the watch ended (timeout or the server closed it): read again
	}
}
