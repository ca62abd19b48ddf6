package work_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	work "flotilla.dev/flotilla/hub/work"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/test/testenv"
)

const testLimit = 16 * 1024

// warnings collects admission warnings the apiserver passes back.
type warnings struct{ got []string }

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) { w.got = append(w.got, text) }

// startHub runs work.Setup in a manager with a real webhook server and
// registers work.Webhooks() on the hub, as the hub process does.
func startHub(t *testing.T) (*testenv.Env, client.Client, *warnings) {
	return startHubWith(t, work.Options{ManifestLimit: testLimit})
}

// startHubWith is startHub with the given work options.
func startHubWith(t *testing.T, opts work.Options) (*testenv.Env, client.Client, *warnings) {
	ctrl.SetLogger(logr.Discard())
	env := testenv.Start(t, testenv.Options{})
	certDir := t.TempDir()
	crt, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(certDir, "tls.crt"), crt, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(certDir, "tls.key"), key, 0o600))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	mgr, err := ctrl.NewManager(env.Hub.Config, ctrl.Options{
		Scheme:        scheme.New(),
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
	})
	require.NoError(t, err)
	require.NoError(t, work.Setup(mgr, opts))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	hooks := work.Webhooks()
	require.Len(t, hooks, 3)
	assert.Equal(t, work.WebhookPath, *hooks[0].ClientConfig.URL, "only the path: the hub adds its base URL")
	assert.Equal(t, work.ReplicaSetWebhookPath, *hooks[1].ClientConfig.URL)
	assert.Equal(t, work.AddonWebhookPath, *hooks[2].ClientConfig.URL)
	for i := range hooks {
		url := fmt.Sprintf("https://127.0.0.1:%d%s", port, *hooks[i].ClientConfig.URL)
		hooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: crt}
	}
	admin, err := client.New(env.Hub.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return mgr.GetWebhookServer().StartedChecker()(nil) == nil }, 30*time.Second, 50*time.Millisecond)
	for _, ns := range []string{"cluster1", "cluster2", "not-a-cluster"} {
		require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	for _, name := range []string{"cluster1", "cluster2"} {
		require.NoError(t, admin.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}))
	}
	// A work from before the webhook, that it would refuse.
	require.NoError(t, admin.Create(ctx, mw("cluster1", "legacy", cm("app", "a", 1), cm("app", "a", 1))))
	require.NoError(t, admin.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "work-test"}, Webhooks: hooks}))
	mutating := work.MutatingWebhooks()
	require.Len(t, mutating, 1)
	assert.Equal(t, work.FinalizerPath, *mutating[0].ClientConfig.URL)
	for i := range mutating {
		url := fmt.Sprintf("https://127.0.0.1:%d%s", port, *mutating[i].ClientConfig.URL)
		mutating[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: crt}
	}
	require.NoError(t, admin.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "work-test"}, Webhooks: mutating}))

	w := &warnings{}
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)

	// The apiserver picks up a new webhook configuration asynchronously: wait
	// until an invalid work is refused.
	probes := 0
	require.Eventually(t, func() bool {
		probes++
		err := c.Create(ctx, mw("cluster1", fmt.Sprintf("probe-%d", probes), cm("app", "a", 1), cm("app", "a", 1)))
		return err != nil && strings.Contains(err.Error(), "duplicates manifest 0")
	}, 30*time.Second, 100*time.Millisecond, "webhook should be active")
	return env, c, w
}

func mw(ns, name string, manifests ...string) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, m := range manifests {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(m)}})
	}
	return w
}

func cm(ns, name string, size int) string {
	b, _ := json.Marshal(map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": name, "namespace": ns},
		"data":     map[string]interface{}{"x": strings.Repeat("x", size)}})
	return string(b)
}

func TestWebhook(t *testing.T) {
	env, c, warn := startHub(t)
	ctx := context.Background()

	t.Run("valid work is admitted", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, mw("cluster1", "ok", cm("app", "a", 10), cm("app", "b", 10))))
	})

	// The CRD schema already refuses manifests without apiVersion or kind
	// (they are embedded resources); everything else is the webhook's.
	rejections := []struct {
		name string
		work *workv1.ManifestWork
		want string
	}{
		{"no manifests", mw("cluster1", "none"), "spec.workload.manifests is empty"},
		{"empty manifest", mw("cluster1", "empty", cm("app", "a", 1), `{}`), "spec.workload.manifests[1].apiVersion: Required value"},
		{"missing name", mw("cluster1", "noname", `{"apiVersion":"v1","kind":"Secret","metadata":{"namespace":"app"}}`),
			"manifest 0 (Secret) has no metadata.name"},
		{"missing kind", mw("cluster1", "nokind", `{"apiVersion":"v1","metadata":{"name":"x"}}`), "spec.workload.manifests[0].kind: Required value"},
		{"generateName", mw("cluster1", "gen", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"x-","namespace":"app"}}`),
			`manifest 0 (ConfigMap) uses metadata.generateName "x-"`},
		{"duplicate", mw("cluster1", "dup", cm("app", "a", 1), cm("app", "b", 1), cm("app", "a", 2)),
			"manifest 2 (ConfigMap app/a) duplicates manifest 0"},
		{"many problems, listed up to ten", mw("cluster1", "many", repeat(cm("app", "a", 1), 15)...), "and 4 more problems"},
		{"too large", mw("cluster1", "big", cm("app", "a", 10), cm("app", "huge", testLimit)),
			fmt.Sprintf("more than the limit of %d bytes; the largest is manifest 1 (ConfigMap", testLimit)},
	}
	for _, tc := range rejections {
		t.Run("rejects "+tc.name, func(t *testing.T) {
			err := c.Create(ctx, tc.work)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			if !strings.Contains(tc.want, "Required value") {
				assert.Contains(t, err.Error(), "denied the request", "refused by the webhook")
			}
		})
	}

	t.Run("rejects an update that breaks a work", func(t *testing.T) {
		w := &workv1.ManifestWork{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "ok"}, w))
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, w.Spec.Workload.Manifests[0])
		err := c.Update(ctx, w)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "manifest 2 (ConfigMap app/a) duplicates manifest 0")
	})

	t.Run("writes that keep the manifests are not judged again", func(t *testing.T) {
		w := &workv1.ManifestWork{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "legacy"}, w))
		w.Finalizers = append(w.Finalizers, "cluster.open-cluster-management.io/manifest-work-cleanup")
		require.NoError(t, c.Update(ctx, w), "an agent can still add its finalizer")
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, w.Spec.Workload.Manifests[0])
		assert.ErrorContains(t, c.Update(ctx, w), "duplicates manifest 0", "changing the manifests is judged")
		w = &workv1.ManifestWork{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "legacy"}, w))
		w.Finalizers = nil
		require.NoError(t, c.Update(ctx, w))
	})

	t.Run("a work outside a cluster namespace is reported", func(t *testing.T) {
		warn.got = nil
		require.NoError(t, c.Create(ctx, mw("not-a-cluster", "lost", cm("app", "a", 1))))
		require.NotEmpty(t, warn.got, "the creator is warned")
		assert.Contains(t, warn.got[0], `namespace "not-a-cluster" belongs to no managed cluster`)
		cs := kubernetes.NewForConfigOrDie(env.Hub.Config)
		require.Eventually(t, func() bool {
			l, err := cs.EventsV1().Events("not-a-cluster").List(ctx, metav1.ListOptions{})
			return err == nil && hasEvent(l.Items, "lost", work.ReasonNotAClusterNamespace)
		}, 30*time.Second, 100*time.Millisecond, "a Warning event on the work")

		warn.got = nil
		require.NoError(t, c.Create(ctx, mw("cluster1", "fine", cm("app", "a", 1))))
		assert.Empty(t, warn.got, "no warning in a cluster namespace")
		l, err := cs.EventsV1().Events("cluster1").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		assert.False(t, hasEvent(l.Items, "fine", work.ReasonNotAClusterNamespace))
	})
}

// TestDeniedCluster: nothing new may be written where a denied or deleted
// cluster's agent could still be watching, and its works show they are not
// delivered.
func TestDeniedCluster(t *testing.T) {
	_, c, _ := startHub(t)
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "cluster2", Name: "web"}
	require.NoError(t, c.Create(ctx, mw("cluster2", "web", cm("app", "a", 1))))
	// The agent applied generation 1 and said so.
	w := &workv1.ManifestWork{}
	require.NoError(t, c.Get(ctx, key, w))
	w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete",
		Message: "applied", ObservedGeneration: 1, LastTransitionTime: metav1.Now()}}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{Conditions: []metav1.Condition{{Type: workv1.ManifestApplied,
		Status: metav1.ConditionTrue, Reason: "AppliedManifestComplete", Message: "applied", ObservedGeneration: 1, LastTransitionTime: metav1.Now()}}}}
	require.NoError(t, c.Status().Update(ctx, w))

	setAccepts := func(accepts bool) {
		mc := &clusterv1.ManagedCluster{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "cluster2"}, mc))
		mc.Spec.HubAcceptsClient = accepts
		require.NoError(t, c.Update(ctx, mc))
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionHubAccepted,
			Status: metav1.ConditionTrue, Reason: "HubClusterAdminAccepted", Message: "accepted"})
		if !accepts {
			meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionHubAccepted,
				Status: metav1.ConditionFalse, Reason: "HubClusterAdminDenied", Message: "denied"})
		}
		require.NoError(t, c.Status().Update(ctx, mc))
	}
	change := func(n int) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error { // the hub writes the status meanwhile
			w := &workv1.ManifestWork{}
			require.NoError(t, c.Get(ctx, key, w))
			w.Spec.Workload.Manifests[0].Raw = []byte(cm("app", "a", n))
			return c.Update(ctx, w)
		})
	}
	applied := func() *metav1.Condition {
		w := &workv1.ManifestWork{}
		require.NoError(t, c.Get(ctx, key, w))
		return meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	}

	setAccepts(false)
	t.Run("a change to a denied cluster's work is refused, naming the cluster and the way back", func(t *testing.T) {
		err := change(2)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `ManifestWork cluster2/web cannot be created or changed: cluster cluster2 is denied by the hub (spec.hubAcceptsClient=false)`)
		assert.Contains(t, err.Error(), "flotilla accept --clusters cluster2")
		assert.ErrorContains(t, c.Create(ctx, mw("cluster2", "new", cm("app", "b", 1))), "cluster cluster2 is denied by the hub")
	})
	t.Run("writes that carry nothing new still pass", func(t *testing.T) {
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			w := &workv1.ManifestWork{}
			require.NoError(t, c.Get(ctx, key, w))
			w.Labels = map[string]string{"team": "a"}
			return c.Update(ctx, w)
		}))
	})
	t.Run("the hub shows the work as not delivered", func(t *testing.T) {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			cond := applied()
			if assert.NotNil(ct, cond) {
				assert.Equal(ct, metav1.ConditionUnknown, cond.Status)
				assert.Equal(ct, work.ReasonClusterDenied, cond.Reason)
				assert.Contains(ct, cond.Message, "the last generation it applied is 1")
			}
		}, 30*time.Second, 100*time.Millisecond)
	})
	setAccepts(true)
	t.Run("accepted again: changes pass and the hub waits for the agent", func(t *testing.T) {
		require.NoError(t, change(3))
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			cond := applied()
			if assert.NotNil(ct, cond) {
				assert.Equal(ct, work.ReasonAwaitingAgent, cond.Reason)
				assert.Contains(ct, cond.Message, "waiting for its agent to apply generation 2")
			}
		}, 30*time.Second, 100*time.Millisecond)
	})
	t.Run("nothing new for a cluster being deleted; its works can go", func(t *testing.T) {
		mc := &clusterv1.ManagedCluster{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "cluster2"}, mc))
		mc.Finalizers = []string{"test.flotilla.dev/hold"}
		require.NoError(t, c.Update(ctx, mc))
		require.NoError(t, c.Delete(ctx, mc))
		assert.ErrorContains(t, change(4), "cluster cluster2 is being deleted: nothing new reaches it, and its works can only be deleted")
		require.NoError(t, c.Delete(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster2", Name: "web"}}))
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "cluster2"}, mc))
		mc.Finalizers = nil
		require.NoError(t, c.Update(ctx, mc))
	})
}

func hasEvent(evs []eventsv1.Event, name, reason string) bool {
	for _, e := range evs {
		if e.Regarding.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
			return true
		}
	}
	return false
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestExecutorAdmission: naming an executor needs RBAC execute-as on
// manifestworks for that service account (OCM's check); without it the work is
// refused at create and at an update that sets the executor.
func TestExecutorAdmission(t *testing.T) {
	env, admin, _ := startHub(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(env.Hub.Config)
	// alice may write works in cluster1, and execute as app/deployer only.
	_, err := cs.RbacV1().Roles("cluster1").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "works"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{workv1.GroupName}, Resources: []string{"manifestworks"}, Verbs: []string{"get", "create", "update"}},
			{APIGroups: []string{workv1.GroupName}, Resources: []string{"manifestworks"}, Verbs: []string{work.ExecuteAsVerb},
				ResourceNames: []string{"system:serviceaccount:app:deployer"}},
		}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().RoleBindings("cluster1").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "works"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.Impersonate.UserName = "alice"
	alice, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)

	withExecutor := func(w *workv1.ManifestWork, ns, name string) *workv1.ManifestWork {
		w.Spec.Executor = &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{
			Type: workv1.ExecutorSubjectTypeServiceAccount, ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{Namespace: ns, Name: name}}}
		return w
	}
	t.Run("allowed executor is admitted", func(t *testing.T) {
		require.NoError(t, alice.Create(ctx, withExecutor(mw("cluster1", "as-deployer", cm("app", "a", 1)), "app", "deployer")))
	})
	t.Run("creator without execute-as is refused at create, naming user, executor and permission", func(t *testing.T) {
		err := alice.Create(ctx, withExecutor(mw("cluster1", "as-admin", cm("app", "a", 1)), "kube-system", "admin"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), `user "alice" may not use executor ServiceAccount kube-system/admin in namespace cluster1`)
		assert.Contains(t, err.Error(), `execute-as work.open-cluster-management.io/manifestworks named "system:serviceaccount:kube-system:admin"`)
	})
	t.Run("an update that switches the executor is judged", func(t *testing.T) {
		require.NoError(t, alice.Create(ctx, mw("cluster1", "plain", cm("app", "a", 1))))
		w := &workv1.ManifestWork{}
		require.NoError(t, alice.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "plain"}, w))
		assert.ErrorContains(t, alice.Update(ctx, withExecutor(w, "kube-system", "admin")), `may not use executor ServiceAccount kube-system/admin`)
	})
	t.Run("without the nil-executor option a work without executor needs no execute-as", func(t *testing.T) {
		require.NoError(t, alice.Create(ctx, mw("cluster1", "no-executor", cm("app", "a", 1))))
	})
	t.Run("a cluster admin may use any executor", func(t *testing.T) {
		require.NoError(t, admin.Create(ctx, withExecutor(mw("cluster1", "admin-as", cm("app", "a", 1)), "kube-system", "admin")))
	})
	t.Run("editing the manifests of a work whose executor the user may not use is refused", func(t *testing.T) {
		// The admin's work runs as kube-system/admin; alice may update works in
		// cluster1 but not execute as kube-system/admin, so she may not choose
		// what that identity applies.
		w := &workv1.ManifestWork{}
		require.NoError(t, alice.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "admin-as"}, w))
		w.Spec.Workload = mw("cluster1", "admin-as", cm("kube-system", "injected", 1)).Spec.Workload
		assert.ErrorContains(t, alice.Update(ctx, w), `user "alice" may not use executor ServiceAccount kube-system/admin`)
		w = &workv1.ManifestWork{}
		require.NoError(t, alice.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "admin-as"}, w))
		w.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
		assert.ErrorContains(t, alice.Update(ctx, w), `may not use executor ServiceAccount kube-system/admin`)
		// A write that leaves the spec alone still passes.
		w = &workv1.ManifestWork{}
		require.NoError(t, alice.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "admin-as"}, w))
		w.Labels = map[string]string{"touched": "yes"}
		require.NoError(t, alice.Update(ctx, w))
	})
	t.Run("editing the manifests under an executor the user may use is admitted", func(t *testing.T) {
		w := &workv1.ManifestWork{}
		require.NoError(t, alice.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "as-deployer"}, w))
		w.Spec.Workload = mw("cluster1", "as-deployer", cm("app", "b", 1)).Spec.Workload
		require.NoError(t, alice.Update(ctx, w))
	})
	t.Run("an executor without a service account is refused", func(t *testing.T) {
		w := mw("cluster1", "no-sa", cm("app", "a", 1))
		w.Spec.Executor = &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{Type: workv1.ExecutorSubjectTypeServiceAccount}}
		assert.ErrorContains(t, admin.Create(ctx, w), "spec.executor.subject.serviceAccount is required")
	})
}

// TestFinishedWorkExpires: a work whose Complete condition is True goes
// ttlSecondsAfterFinished later; one without the TTL stays.
func TestFinishedWorkExpires(t *testing.T) {
	_, c, _ := startHub(t)
	ctx := context.Background()
	complete := func(name string) {
		w := &workv1.ManifestWork{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: name}, w))
		w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkComplete, Status: metav1.ConditionTrue, Reason: "ConditionRulesAggregated",
			Message: "Job is finished", ObservedGeneration: 1, LastTransitionTime: metav1.Now()}}
		require.NoError(t, c.Status().Update(ctx, w))
	}
	withTTL := mw("cluster1", "job-once", cm("app", "a", 1))
	withTTL.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground, TTLSecondsAfterFinished: ptr.To[int64](1)}
	require.NoError(t, c.Create(ctx, withTTL))
	require.NoError(t, c.Create(ctx, mw("cluster1", "job-kept", cm("app", "a", 1))))
	complete("job-once")
	complete("job-kept")
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "job-once"}, &workv1.ManifestWork{}))
	}, 30*time.Second, 100*time.Millisecond, "the finished work is deleted after its TTL")
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "job-kept"}, &workv1.ManifestWork{}), "no TTL: kept")
}
