package deny_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/hub/registration/accept"
	hubwork "flotilla.dev/flotilla/hub/work"
	"flotilla.dev/flotilla/klusterlet"
	"flotilla.dev/flotilla/klusterlet/join"
	"flotilla.dev/flotilla/klusterlet/registration"
	"flotilla.dev/flotilla/test/testenv"
)

const (
	timeout = 2 * time.Minute
	tick    = 200 * time.Millisecond
	// changes made to a denied cluster's work, spread over changeWindow.
	changes      = 10
	changeWindow = 3 * time.Minute
)

// joinCluster joins `name` from spoke through the real path (join, CSR, accept)
// and runs its klusterlet, work agent included, until the test ends.
func joinCluster(t *testing.T, spoke *testenv.ControlPlane, name string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, join.Join(ctx, join.Options{SpokeConfig: spoke.Config, HubAPIServer: env.Hub.URL, HubToken: token,
		ClusterName: name, NoDeployment: true}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := klusterlet.Run(ctx, klusterlet.Options{
			Registration: registration.Options{ClusterName: name, SpokeConfig: spoke.Config, HubKubeconfigDir: t.TempDir(),
				LeaseDurationSeconds: 5, StatusSyncInterval: time.Second, RetryInterval: time.Second},
			WorkStatusSyncInterval: time.Second,
		})
		if err != nil {
			t.Errorf("klusterlet %s: %v", name, err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	require.NoError(t, accept.Accept(ctx, accept.Options{Config: env.Hub.Config, Clusters: []string{name}, Wait: true, Timeout: timeout}))
}

func configMap(name string, version int) []byte {
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"data":     map[string]any{"version": fmt.Sprint(version), "secret-ish": "only for accepted clusters"}})
	return b
}

func manifestWork(cluster, name string, version int) *workv1.ManifestWork {
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
			{RawExtension: runtime.RawExtension{Raw: configMap(name, version)}}}}}}
}

func works() workclient.Interface { return workclient.NewForConfigOrDie(env.Hub.Config) }

// setWorkVersion rewrites the work's ConfigMap to version v.
func setWorkVersion(cluster, name string, v int) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w, err := works().WorkV1().ManifestWorks(cluster).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		w.Spec.Workload.Manifests[0].Raw = configMap(name, v)
		_, err = works().WorkV1().ManifestWorks(cluster).Update(context.Background(), w, metav1.UpdateOptions{})
		return err
	})
}

func setAccepts(t *testing.T, cluster string, accepts bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"hubAcceptsClient":%t}}`, accepts)
	_, err := clusterclient.NewForConfigOrDie(env.Hub.Config).ClusterV1().ManagedClusters().Patch(context.Background(), cluster,
		types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// spokeVersion is the version the ConfigMap on the managed cluster holds ("" = absent).
func spokeVersion(t require.TestingT, spoke *testenv.ControlPlane, name string) string {
	cm, err := kubernetes.NewForConfigOrDie(spoke.Config).CoreV1().ConfigMaps("default").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	require.NoError(t, err)
	return cm.Data["version"]
}

func waitSpokeVersion(t *testing.T, spoke *testenv.ControlPlane, name, want string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) { assert.Equal(c, want, spokeVersion(c, spoke, name)) }, timeout, tick,
		"ConfigMap %s on the managed cluster", name)
}

func workApplied(t require.TestingT, cluster, name string) *metav1.Condition {
	w, err := works().WorkV1().ManifestWorks(cluster).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	if c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration != w.Generation {
		return &metav1.Condition{Type: c.Type, Status: metav1.ConditionFalse, Reason: "Stale",
			Message: fmt.Sprintf("Applied=True is for generation %d of %d", c.ObservedGeneration, w.Generation)}
	}
	return c
}

func waitWorkCondition(t *testing.T, cluster, name string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cond := workApplied(c, cluster, name)
		if assert.NotNil(c, cond) {
			assert.Equal(c, status, cond.Status, cond.Message)
			if reason != "" {
				assert.Equal(c, reason, cond.Reason, cond.Message)
			}
		}
	}, timeout, tick, "work %s/%s Applied", cluster, name)
}

// withoutWorkWebhook takes the hub's ManifestWork webhook out of the way until
// the test ends, so the agent's own guard is tested alone.
func withoutWorkWebhook(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	api := kubernetes.NewForConfigOrDie(env.Hub.Config).AdmissionregistrationV1().ValidatingWebhookConfigurations()
	vwc, err := api.Get(ctx, hub.WebhookConfigurationName, metav1.GetOptions{})
	require.NoError(t, err)
	saved := vwc.DeepCopy()
	var keep []admissionregistrationv1.ValidatingWebhook
	for _, h := range vwc.Webhooks {
		if h.ClientConfig.URL == nil || !strings.HasSuffix(*h.ClientConfig.URL, hubwork.WebhookPath) {
			keep = append(keep, h)
		}
	}
	require.Len(t, keep, len(vwc.Webhooks)-1)
	vwc.Webhooks = keep
	_, err = api.Update(ctx, vwc, metav1.UpdateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := api.Get(ctx, hub.WebhookConfigurationName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Webhooks = saved.Webhooks
			_, err = api.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		}))
	})
	// The apiserver sees a new configuration asynchronously: wait until a work
	// the webhook would refuse (no manifests) is admitted, then remove it.
	require.Eventually(t, func() bool {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "webhook-probe"}}
		_, err := works().WorkV1().ManifestWorks("default").Create(ctx, w, metav1.CreateOptions{})
		if err != nil {
			return false
		}
		return works().WorkV1().ManifestWorks("default").Delete(ctx, w.Name, metav1.DeleteOptions{}) == nil
	}, timeout, tick, "the work webhook is out of the way")
}

// TestDenyEndsDelivery: after a deny, ten changes to the cluster's works over
// three minutes reach nothing on the cluster, even with the hub's webhook out
// of the way (the agent closes its hub watches itself); the hub shows the works
// as not delivered. After a re-accept (no CSR needed) every change lands and
// the status catches up. Then the same with the webhook in place: the changes
// are refused, saying why.
func TestDenyEndsDelivery(t *testing.T) {
	ctx := context.Background()
	const cluster = "alpha"
	spoke := env.Clusters[0]
	joinCluster(t, spoke, cluster)
	_, err := works().WorkV1().ManifestWorks(cluster).Create(ctx, manifestWork(cluster, "web", 0), metav1.CreateOptions{})
	require.NoError(t, err)
	waitSpokeVersion(t, spoke, "web", "0")
	waitWorkCondition(t, cluster, "web", metav1.ConditionTrue, "")

	t.Run("agent layer: nothing reaches a denied cluster", func(t *testing.T) {
		withoutWorkWebhook(t)
		spokeKube := kubernetes.NewForConfigOrDie(spoke.Config)
		cm, err := spokeKube.CoreV1().ConfigMaps("default").Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		// Every write to the cluster's ConfigMaps from here on is seen.
		spokeWatch, err := spokeKube.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion})
		require.NoError(t, err)
		defer spokeWatch.Stop()

		setAccepts(t, cluster, false)
		waitWorkCondition(t, cluster, "web", metav1.ConditionUnknown, hubwork.ReasonClusterDenied)

		start := time.Now()
		for i := 1; i <= changes; i++ {
			require.NoError(t, setWorkVersion(cluster, "web", i), "change %d is stored on the hub", i)
			if i == changes/2 {
				_, err := works().WorkV1().ManifestWorks(cluster).Create(ctx, manifestWork(cluster, "late", i), metav1.CreateOptions{})
				require.NoError(t, err)
			}
			// Until the next change is due, nothing may happen on the cluster.
			deadline := time.NewTimer(time.Until(start.Add(changeWindow * time.Duration(i) / changes)))
		watching:
			for {
				select {
				case ev := <-spokeWatch.ResultChan():
					if c, ok := ev.Object.(*corev1.ConfigMap); ok && (c.Name == "web" || c.Name == "late") {
						require.Failf(t, "a change reached the denied cluster", "change %d: %s ConfigMap %s version %s", i, ev.Type, c.Name, c.Data["version"])
					}
					require.NotEqual(t, watch.Error, ev.Type, "the spoke watch failed: %v", ev.Object)
				case <-deadline.C:
					break watching
				}
			}
			w, err := works().WorkV1().ManifestWorks(cluster).Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			cond := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
			require.NotNil(t, cond)
			assert.Equal(t, metav1.ConditionUnknown, cond.Status, "change %d: the hub does not claim the work applied: %s", i, cond.Message)
			assert.Contains(t, cond.Message, "Not delivered: cluster alpha is denied by the hub")
			assert.Contains(t, cond.Message, "the last generation it applied is 1")
		}
		assert.Equal(t, "0", spokeVersion(t, spoke, "web"))
		assert.Equal(t, "", spokeVersion(t, spoke, "late"))

		var out strings.Builder
		require.NoError(t, accept.Accept(ctx, accept.Options{Config: env.Hub.Config, Clusters: []string{cluster}, Progress: &out}))
		assert.Contains(t, out.String(), "accepted cluster alpha")
		assert.NotContains(t, out.String(), "approved CSR", "a joined cluster keeps its certificate")
		waitSpokeVersion(t, spoke, "web", fmt.Sprint(changes))
		waitSpokeVersion(t, spoke, "late", fmt.Sprint(changes/2))
		waitWorkCondition(t, cluster, "web", metav1.ConditionTrue, "")
		waitWorkCondition(t, cluster, "late", metav1.ConditionTrue, "")
	})

	t.Run("hub layer: changes to a denied cluster's works are refused", func(t *testing.T) {
		setAccepts(t, cluster, false)
		waitWorkCondition(t, cluster, "web", metav1.ConditionUnknown, hubwork.ReasonClusterDenied)
		err := setWorkVersion(cluster, "web", 100)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "ManifestWork alpha/web cannot be created or changed: cluster alpha is denied by the hub")
		_, err = works().WorkV1().ManifestWorks(cluster).Create(ctx, manifestWork(cluster, "new", 0), metav1.CreateOptions{})
		assert.ErrorContains(t, err, "cluster alpha is denied by the hub")

		require.NoError(t, accept.Accept(ctx, accept.Options{Config: env.Hub.Config, Clusters: []string{cluster}}))
		require.EventuallyWithT(t, func(c *assert.CollectT) { assert.NoError(c, setWorkVersion(cluster, "web", 100)) }, timeout, tick)
		waitSpokeVersion(t, spoke, "web", "100")
		waitWorkCondition(t, cluster, "web", metav1.ConditionTrue, "")
	})
}

// TestDeleteEndsDelivery: once its ManagedCluster is being deleted, a cluster
// receives nothing new; its works are removed from it and the deletion ends.
func TestDeleteEndsDelivery(t *testing.T) {
	ctx := context.Background()
	const cluster = "beta"
	spoke := env.Clusters[1]
	joinCluster(t, spoke, cluster)
	_, err := works().WorkV1().ManifestWorks(cluster).Create(ctx, manifestWork(cluster, "web", 0), metav1.CreateOptions{})
	require.NoError(t, err)
	waitSpokeVersion(t, spoke, "web", "0")

	mcs := clusterclient.NewForConfigOrDie(env.Hub.Config).ClusterV1().ManagedClusters()
	// A finalizer of the test's keeps the ManagedCluster in deletion until the
	// checks below are done.
	// The hub's controllers update the cluster too: on a conflict, read it
	// again.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc, err := mcs.Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mc.Finalizers = append(mc.Finalizers, "test.flotilla.dev/hold")
		_, err = mcs.Update(ctx, mc, metav1.UpdateOptions{})
		return err
	}))
	require.NoError(t, mcs.Delete(ctx, cluster, metav1.DeleteOptions{}))

	_, err = works().WorkV1().ManifestWorks(cluster).Create(ctx, manifestWork(cluster, "late", 1), metav1.CreateOptions{})
	if err == nil || !apierrors.IsNotFound(err) { // the namespace may be gone already
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cluster beta is being deleted: nothing new reaches it")
	}
	waitSpokeVersion(t, spoke, "web", "") // the agent removed what the work applied
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		mc, err := mcs.Get(ctx, cluster, metav1.GetOptions{})
		if assert.NoError(c, err) {
			assert.Equal(c, []string{"test.flotilla.dev/hold"}, mc.Finalizers, "the hub finished its cleanup")
		}
	}, timeout, tick)
	assert.Equal(t, "", spokeVersion(t, spoke, "late"))
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc, err := mcs.Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mc.Finalizers = nil
		_, err = mcs.Update(ctx, mc, metav1.UpdateOptions{})
		return err
	}))
}
