package work_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/klusterlet/work"
	"flotilla.dev/flotilla/klusterlet/work/applied"
)

// deleteBeforeFinalizer deletes a work on the hub (as its admin) just before
// the agent's first write of that work (the finalizer) reaches the hub: the
// work is gone while the agent applies it, and the write finds it gone.
type deleteBeforeFinalizer struct {
	next http.RoundTripper
	path string
	once sync.Once
	err  error
}

func (d *deleteBeforeFinalizer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut && req.URL.Path == d.path {
		d.once.Do(func() {
			d.err = hub.Delete(context.Background(), &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{
				Namespace: "cluster2", Name: d.path[strings.LastIndex(d.path, "/")+1:]}})
		})
	}
	return d.next.RoundTrip(req)
}

// A work deleted from the hub before the agent's finalizer reached it leaves
// nothing on the cluster: what the agent applied meanwhile is removed at once,
// with its record, not after the eviction grace (an hour by default).
func TestWorkDeletedBeforeItsFinalizerLeavesNothing(t *testing.T) {
	ctx := context.Background()
	spoke2 := kubernetes.NewForConfigOrDie(env.Clusters[1].Config)
	_, err := spoke2.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "abandoned"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	trap := &deleteBeforeFinalizer{path: "/apis/work.open-cluster-management.io/v1/namespaces/cluster2/manifestworks/abandoned"}
	hubCfg := agentHubConfig(env.Hub.Config, "cluster2")
	hubCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { trap.next = rt; return trap })
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- work.Run(ctx, work.Options{HubConfig: hubCfg, SpokeConfig: env.Clusters[1].Config,
			ClusterName: "cluster2", StatusSyncInterval: syncInterval})
	}()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	cms, err := spoke2.CoreV1().ConfigMaps("abandoned").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer cms.Stop()
	newWork(t, "cluster2", "abandoned", configMap("abandoned", "cm", map[string]interface{}{"k": "v"})).create(t)

	// The agent applied the ConfigMap, and then removed it.
	var seen []watch.EventType
	timeout := time.After(wait)
	for len(seen) < 2 {
		select {
		case ev := <-cms.ResultChan():
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok && cm.Name == "cm" && ev.Type != watch.Modified {
				seen = append(seen, ev.Type)
			}
		case <-timeout:
			t.Fatalf("the ConfigMap of the deleted work: events %v, want it added and deleted", seen)
		}
	}
	assert.Equal(t, []watch.EventType{watch.Added, watch.Deleted}, seen)
	require.NoError(t, trap.err, "the work was deleted on the hub before the finalizer write")
	require.Eventually(t, func() bool {
		err := spoke2c(t).Get(ctx, client.ObjectKey{Name: applied.Name(hubHash, "abandoned")}, &workv1.AppliedManifestWork{})
		return apierrors.IsNotFound(err)
	}, wait, tick, "the record of the deleted work is removed too")
}

func spoke2c(t *testing.T) client.Client {
	scheme := runtime.NewScheme()
	_ = workv1.Install(scheme)
	c, err := client.New(env.Clusters[1].Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}
