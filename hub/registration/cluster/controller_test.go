package cluster

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub/registration/rbac"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/test/testenv"
)

// These tests drive the Reconciler by hand against a real hub apiserver (no
// manager, no webhook): each step happens exactly when the test says, so races
// between the agent, the admin and the hub are played out deterministically.

const (
	timeout = 60 * time.Second
	tick    = 100 * time.Millisecond
)

var (
	hubConfig *rest.Config
	admin     client.Client
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	env, err := testenv.New(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer env.Stop()
	hubConfig = env.Hub.Config
	admin, err = client.New(hubConfig, client.Options{Scheme: scheme.New()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := EnsureSharedRoles(context.Background(), admin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func reconcile(t *testing.T, name string) {
	t.Helper()
	r := &Reconciler{Client: admin}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: name}})
	require.NoError(t, err)
}

func getCluster(t *testing.T, name string) *clusterv1.ManagedCluster {
	t.Helper()
	mc := &clusterv1.ManagedCluster{}
	require.NoError(t, admin.Get(context.Background(), client.ObjectKey{Name: name}, mc))
	return mc
}

// agentClient acts as the cluster's agent (its certificate's user and groups).
func agentClient(t *testing.T, cluster string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(hubConfig)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: ocm.AgentUserName(cluster, "agent1"),
		Groups:   []string{ocm.ClusterGroupName(cluster), ocm.ManagedClustersGroup, "system:authenticated"},
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	return c
}

func createAccepted(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	require.NoError(t, admin.Create(ctx, mc))
	t.Cleanup(func() {
		mc := &clusterv1.ManagedCluster{}
		if admin.Get(ctx, client.ObjectKey{Name: name}, mc) == nil {
			mc.Finalizers = nil
			_ = admin.Update(ctx, mc)
			_ = admin.Delete(ctx, mc)
		}
	})
}

// TestDenyAfterAgentDroppedItsCondition: an accepted agent deletes the
// HubAcceptedManagedCluster condition from its status (which it may write), then
// the admin denies it: the hub still takes its access away, because the deny is
// driven by spec.hubAcceptsClient alone.
func TestDenyAfterAgentDroppedItsCondition(t *testing.T) {
	ctx := context.Background()
	const name = "dodger"
	createAccepted(t, name)
	reconcile(t, name)
	require.True(t, meta.IsStatusConditionTrue(getCluster(t, name).Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted))

	agent := agentClient(t, name)
	lease := &coordinationv1.Lease{}
	require.Eventually(t, func() bool {
		return agent.Get(ctx, client.ObjectKey{Namespace: name, Name: "managed-cluster-lease"}, lease) == nil && agent.Update(ctx, lease) == nil
	}, timeout, tick, "the hub created the lease on acceptance, and an accepted agent may renew it")
	// Its own lease rights in the namespace, bound to its ServiceAccount (inert
	// here, where manifests/hub was not applied: this hub is an admin).
	want, hubBinding := rbac.HubLeasesRoleBinding(name), &rbacv1.RoleBinding{}
	require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(want), hubBinding), "the hub binds its lease rights in the cluster namespace")
	assert.Equal(t, want.RoleRef, hubBinding.RoleRef)
	assert.Equal(t, want.Subjects, hubBinding.Subjects)
	// As upstream grants: read and renew, nothing more.
	err := agent.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "another-lease"}})
	require.True(t, apierrors.IsForbidden(err), "an agent may not create leases: %v", err)
	require.True(t, apierrors.IsForbidden(agent.Delete(ctx, lease)), "an agent may not delete its lease")

	// The agent strips the condition with its own credential.
	require.Eventually(t, func() bool {
		mc := getCluster(t, name)
		meta.RemoveStatusCondition(&mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted)
		return agent.Status().Update(ctx, mc) == nil
	}, timeout, tick)
	require.Nil(t, meta.FindStatusCondition(getCluster(t, name).Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted))

	// The admin denies it.
	mc := getCluster(t, name)
	mc.Spec.HubAcceptsClient = false
	require.NoError(t, admin.Update(ctx, mc))
	reconcile(t, name)

	cond := meta.FindStatusCondition(getCluster(t, name).Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Equal(t, ReasonDenied, cond.Reason)
	for _, rb := range []string{ocm.RegistrationRoleBindingName(name), ocm.WorkRoleBindingName(name)} {
		err := admin.Get(ctx, client.ObjectKey{Namespace: name, Name: rb}, &rbacv1.RoleBinding{})
		assert.True(t, apierrors.IsNotFound(err), "RoleBinding %s removed: %v", rb, err)
	}
	role := &rbacv1.ClusterRole{}
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: ocm.ClusterRoleName(name)}, role))
	assert.Equal(t, rbac.DeniedClusterRules(name), role.Rules, "ClusterRole is read-only")
	require.Eventually(t, func() bool {
		err := agent.Get(ctx, client.ObjectKeyFromObject(lease), &coordinationv1.Lease{})
		return apierrors.IsForbidden(err)
	}, timeout, tick, "the agent's access to its namespace ends")

	// Denying again changes nothing and fails nothing.
	before := getCluster(t, name)
	reconcile(t, name)
	assert.Equal(t, before.ResourceVersion, getCluster(t, name).ResourceVersion)
}

// TestNeverAcceptedGetsNothing: a cluster that was never accepted gets no RBAC
// and no HubAccepted condition from the (now unconditional) deny path.
func TestNeverAcceptedGetsNothing(t *testing.T) {
	ctx := context.Background()
	const name = "pending"
	require.NoError(t, admin.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	t.Cleanup(func() {
		mc := &clusterv1.ManagedCluster{}
		if admin.Get(ctx, client.ObjectKey{Name: name}, mc) == nil {
			mc.Finalizers = nil
			_ = admin.Update(ctx, mc)
			_ = admin.Delete(ctx, mc)
		}
	})
	reconcile(t, name)
	reconcile(t, name)
	assert.Nil(t, meta.FindStatusCondition(getCluster(t, name).Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted))
	err := admin.Get(ctx, client.ObjectKey{Name: ocm.ClusterRoleName(name)}, &rbacv1.ClusterRole{})
	assert.True(t, apierrors.IsNotFound(err), "no ClusterRole: %v", err)
}

// TestRefusesForeignNamespace: a cluster named like a namespace the hub did not
// make for it is not accepted (HubAccepted=False saying why); the namespace gets
// no label, no RoleBinding, and survives the cluster's deletion with its content.
func TestRefusesForeignNamespace(t *testing.T) {
	// Direct: every read goes to the apiserver. Hub cache: reads go through a
	// cache built as the hub's (Namespaces, ClusterRoles and ClusterRoleBindings
	// with the cluster label only), where a foreign namespace is not to be seen;
	// the Reconciler must still find it and refuse it.
	direct := &Reconciler{Client: admin}
	cached := hubCacheReconciler(t)
	for _, mode := range []struct {
		name   string
		suffix string
		r      *Reconciler
	}{{"direct", "", direct}, {"hub cache", "-cached", cached}} {
		t.Run(mode.name, func(t *testing.T) { refusesForeignNamespace(t, mode.suffix, mode.r) })
	}
}

// hubCacheReconciler returns a Reconciler that reads through a cache filtered
// as the hub's (rbac.Labelled) and past it through admin.
func hubCacheReconciler(t *testing.T) *Reconciler {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	labelled := cache.ByObject{Label: rbac.Labelled()}
	c, err := cache.New(hubConfig, cache.Options{Scheme: scheme.New(), ByObject: map[client.Object]cache.ByObject{
		&corev1.Namespace{}: labelled, &rbacv1.ClusterRole{}: labelled, &rbacv1.ClusterRoleBinding{}: labelled,
	}})
	require.NoError(t, err)
	go func() { _ = c.Start(ctx) }()
	cached, err := client.New(hubConfig, client.Options{Scheme: scheme.New(), Cache: &client.CacheOptions{Reader: c}})
	require.NoError(t, err)
	return &Reconciler{Client: cached, Reader: admin}
}

func refusesForeignNamespace(t *testing.T, suffix string, r *Reconciler) {
	ctx := context.Background()
	// A cache may not have seen the last write yet: reconcile until it shows.
	reconcileUntil := func(name string, done func() bool) bool {
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
			t.Logf("reconcile %s: %v", name, err)
			return false
		}
		return done()
	}
	for _, tc := range []struct{ name, owner, want string }{
		{"team-a" + suffix, "", "was not created by the hub for this cluster"},
		{"team-b" + suffix, "some-other-cluster", "belongs to managed cluster some-other-cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tc.name}}
			if tc.owner != "" {
				ns.Labels = rbac.ClusterLabels(tc.owner)
			}
			require.NoError(t, admin.Create(ctx, ns))
			work := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: tc.name}}
			require.NoError(t, admin.Create(ctx, work))
			createAccepted(t, tc.name)
			var cond *metav1.Condition
			require.Eventually(t, func() bool {
				return reconcileUntil(tc.name, func() bool {
					mc := &clusterv1.ManagedCluster{}
					if err := admin.Get(ctx, client.ObjectKey{Name: tc.name}, mc); err != nil {
						return false
					}
					cond = meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted)
					return cond != nil
				})
			}, timeout, tick, "a HubAccepted verdict")
			assert.Equal(t, metav1.ConditionFalse, cond.Status)
			assert.Equal(t, ReasonNamespaceConflict, cond.Reason)
			assert.Contains(t, cond.Message, tc.want)
			got := &corev1.Namespace{}
			require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: tc.name}, got))
			assert.Equal(t, tc.owner, got.Labels[ocm.ClusterNameLabel], "namespace label untouched")
			for _, rb := range []string{ocm.RegistrationRoleBindingName(tc.name), ocm.WorkRoleBindingName(tc.name)} {
				err := admin.Get(ctx, client.ObjectKey{Namespace: tc.name, Name: rb}, &rbacv1.RoleBinding{})
				assert.True(t, apierrors.IsNotFound(err), "no RoleBinding %s: %v", rb, err)
			}

			// Deleting the cluster leaves the namespace and its work alone.
			require.NoError(t, admin.Delete(ctx, getCluster(t, tc.name)))
			require.Eventually(t, func() bool {
				return reconcileUntil(tc.name, func() bool {
					return apierrors.IsNotFound(admin.Get(ctx, client.ObjectKey{Name: tc.name}, &clusterv1.ManagedCluster{}))
				})
			}, timeout, tick, "the cluster is gone")
			require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: tc.name}, got))
			assert.True(t, got.DeletionTimestamp.IsZero(), "namespace not deleted")
			require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(work), &workv1.ManifestWork{}), "work kept")
		})
	}
}
