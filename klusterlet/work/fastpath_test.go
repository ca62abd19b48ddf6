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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/klusterlet/work/applied"
	"flotilla.dev/flotilla/klusterlet/work/apply"
)

// before wraps cfg so that hook runs once, before the first request match
// selects, which is then sent.
func before(cfg *rest.Config, match func(*http.Request) bool, hook func()) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	var once sync.Once
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if match(req) {
				once.Do(hook)
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

func spoke2Clients(t *testing.T) (kubernetes.Interface, client.Client) {
	scheme := runtime.NewScheme()
	_ = workv1.Install(scheme)
	c, err := client.New(env.Clusters[1].Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return kubernetes.NewForConfigOrDie(env.Clusters[1].Config), c
}

// A first pass whose work is deleted, its finalizer taken off, before the
// agent's status write: the agent removes what it applied at once (the
// status write's NotFound), record included, without waiting for eviction.
func TestFirstPassOfAWorkDeletedBeforeItsStatus(t *testing.T) {
	ctx := context.Background()
	spoke2, spoke2c := spoke2Clients(t)
	const name = "gone-before-status"
	_, err := spoke2.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	w := newWork(t, "cluster2", name, configMap(name, name, map[string]interface{}{"k": "v"}))
	w.w.Finalizers = []string{workv1.ManifestWorkFinalizer}
	w.create(t)
	fired := make(chan struct{})
	hubCfg := before(agentHubConfig(env.Hub.Config, "cluster2"), func(req *http.Request) bool {
		return req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/manifestworks/"+name+"/status")
	}, func() {
		defer close(fired)
		// The first pass has applied: the ConfigMap is there, marked.
		cm, err := spoke2.CoreV1().ConfigMaps(name).Get(ctx, name, metav1.GetOptions{})
		assert.NoError(t, err)
		if err == nil {
			assert.NotEmpty(t, cm.Annotations[apply.PendingOwnerAnnotation]+string(cm.UID))
		}
		got := &workv1.ManifestWork{}
		assert.NoError(t, hub.Get(ctx, client.ObjectKey{Namespace: "cluster2", Name: name}, got))
		got.Finalizers = nil
		assert.NoError(t, hub.Update(ctx, got))
		assert.NoError(t, hub.Delete(ctx, got))
	})
	startAgentOn(t, hubCfg, env.Clusters[1].Config, syncInterval)
	select {
	case <-fired:
	case <-time.After(wait):
		t.Fatal("the agent wrote no status for the work")
	}
	require.Eventually(t, func() bool {
		_, err := spoke2.CoreV1().ConfigMaps(name).Get(ctx, name, metav1.GetOptions{})
		_, rerr := appliedWork(t, spoke2c, name)
		return apierrors.IsNotFound(err) && apierrors.IsNotFound(rerr)
	}, wait, tick, "the ConfigMap and the record are removed")
}

// The owner reference of a first pass follows a write someone made in
// between (a controller's status, here a label): the adoption reads the
// object again and still adopts it, keeping that write.
func TestAdoptionFollowsAConcurrentWrite(t *testing.T) {
	ctx := context.Background()
	spoke2, spoke2c := spoke2Clients(t)
	const name = "adopt-after-write"
	_, err := spoke2.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	w := newWork(t, "cluster2", name, configMap(name, name, map[string]interface{}{"k": "v"}))
	w.w.Finalizers = []string{workv1.ManifestWorkFinalizer}
	w.create(t)
	spokeCfg := before(env.Clusters[1].Config, func(req *http.Request) bool {
		return req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/configmaps/"+name)
	}, func() {
		cm, err := spoke2.CoreV1().ConfigMaps(name).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		cm.Labels = map[string]string{"written": "between"}
		_, err = spoke2.CoreV1().ConfigMaps(name).Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(t, err)
	})
	startAgentOn(t, agentHubConfig(env.Hub.Config, "cluster2"), spokeCfg, syncInterval)
	waitApplied(t, "cluster2", name)
	amw := recordedWork(t, spoke2c, name, 1)
	cm, err := spoke2.CoreV1().ConfigMaps(name).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, cm.OwnerReferences, 1)
	assert.Equal(t, amw.UID, cm.OwnerReferences[0].UID)
	assert.NotContains(t, cm.Annotations, apply.PendingOwnerAnnotation)
	assert.Equal(t, "between", cm.Labels["written"], "the write in between is kept")
	deleteWork(t, "cluster2", name)
}

// The pending mark is the agent's alone: an object a work only reads keeps
// living when the work goes although someone marked it with the work's
// record, and a manifest that carries the mark does not put it on its
// object.
func TestThePendingMarkIsTheAgents(t *testing.T) {
	ctx := context.Background()
	spoke2, spoke2c := spoke2Clients(t)
	const name = "mark-abuse"
	_, err := spoke2.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	record := applied.Name(hubHash, name)
	_, err = spoke2.CoreV1().ConfigMaps(name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "read-only", Namespace: name,
		Annotations: map[string]string{apply.PendingOwnerAnnotation: record}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	withMark := configMap(name, "carries-mark", map[string]interface{}{"k": "v"})
	withMark["metadata"].(map[string]interface{})["annotations"] = map[string]interface{}{apply.PendingOwnerAnnotation: "someone-else"}
	w := newWork(t, "cluster2", name, configMap(name, "read-only", nil), withMark).
		config(workv1.ManifestConfigOption{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: name, Name: "read-only"},
			UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly}}).
		config(workv1.ManifestConfigOption{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: name, Name: "carries-mark"},
			UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply}})
	w.w.Finalizers = []string{workv1.ManifestWorkFinalizer}
	w.create(t)
	startAgent(t)
	waitApplied(t, "cluster2", name)
	recordedWork(t, spoke2c, name, 1)
	cm, err := spoke2.CoreV1().ConfigMaps(name).Get(ctx, "carries-mark", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, cm.Annotations, apply.PendingOwnerAnnotation, "a manifest cannot set the mark")
	deleteWork(t, "cluster2", name)
	_, err = spoke2.CoreV1().ConfigMaps(name).Get(ctx, "read-only", metav1.GetOptions{})
	assert.NoError(t, err, "an object the work only reads stays, marked or not")
	_, err = spoke2.CoreV1().ConfigMaps(name).Get(ctx, "carries-mark", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "what the work wrote goes: %v", err)
}
