package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub/registration/csr"
	"flotilla.dev/flotilla/hub/registration/health"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/klusterlet/registration"
)

// autoJoiner is the one auto-approve user of these tests.
const autoJoiner = "auto-joiner-race"

// TestAutoApproveNeverOverridesADeny plays out, step by step, an auto-approve
// user's first CSR decided between the admin's deny (spec.hubAcceptsClient
// false) and the hub applying it (HubAccepted still True, or dropped by the
// agent): the approver must neither accept the cluster again nor approve. A
// cluster nobody decided on is still accepted, and its CSR approved once
// granted.
func TestAutoApproveNeverOverridesADeny(t *testing.T) {
	ctx := context.Background()
	grantCSRCreate(t, autoJoiner)
	approver := &csr.Reconciler{Client: admin, AutoApproveUsers: []string{autoJoiner}}
	decide := func(t *testing.T, name string) {
		t.Helper()
		_, err := approver.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: name}})
		require.NoError(t, err)
	}
	deny := func(t *testing.T, name string) {
		t.Helper()
		mc := getCluster(t, name)
		mc.Spec.HubAcceptsClient = false
		require.NoError(t, admin.Update(ctx, mc))
	}
	refused := func(t *testing.T, name, csrName string) {
		t.Helper()
		decide(t, csrName)
		decide(t, csrName)
		assert.False(t, getCluster(t, name).Spec.HubAcceptsClient, "auto-approve accepted the cluster again")
		assert.False(t, approvedCSR(t, csrName), "auto-approve approved a CSR")
	}

	t.Run("deny not yet applied by the hub", func(t *testing.T) {
		const name = "deny-in-flight"
		createAccepted(t, name)
		reconcile(t, name)
		require.True(t, meta.IsStatusConditionTrue(getCluster(t, name).Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted))
		deny(t, name) // the acceptance controller has not run yet: HubAccepted is still True
		refused(t, name, createCSR(t, name))
		reconcile(t, name)
		assert.False(t, meta.IsStatusConditionTrue(getCluster(t, name).Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted))
	})

	t.Run("deny after the agent dropped its condition", func(t *testing.T) {
		const name = "deny-dropped"
		createAccepted(t, name)
		reconcile(t, name)
		mc := getCluster(t, name)
		meta.RemoveStatusCondition(&mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted)
		require.NoError(t, agentClient(t, name).Status().Update(ctx, mc))
		deny(t, name)
		refused(t, name, createCSR(t, name))
	})

	t.Run("undecided cluster: accepted, then approved once granted", func(t *testing.T) {
		const name = "undecided"
		require.NoError(t, admin.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}))
		t.Cleanup(func() { forceDelete(name) })
		reconcile(t, name)
		csrName := createCSR(t, name)
		decide(t, csrName)
		assert.True(t, getCluster(t, name).Spec.HubAcceptsClient, "auto-approve accepts a cluster nobody decided on")
		assert.False(t, approvedCSR(t, csrName), "not before the hub granted its RBAC")
		reconcile(t, name)
		decide(t, csrName)
		assert.True(t, approvedCSR(t, csrName))
	})
}

// TestAutoApproveRule plays out, on a real apiserver, each case of the
// auto-approve rule for an auto-approve user's first CSR: a live accepted
// cluster, a denied one and a deleting one are held for an admin (the CSR
// stays pending, neither approved nor denied, and the event says why); a
// stale one is approved; a cluster that does not exist yet is waited for.
func TestAutoApproveRule(t *testing.T) {
	ctx := context.Background()
	grantCSRCreate(t, autoJoiner)
	recorder := events.NewFakeRecorder(100)
	approver := &csr.Reconciler{Client: admin, Recorder: recorder, AutoApproveUsers: []string{autoJoiner}, LeaseGraceMultiplier: 5}
	decide := func(t *testing.T, name string) ctrl.Result {
		t.Helper()
		res, err := approver.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: name}})
		require.NoError(t, err)
		return res
	}
	// held: decided, the CSR stays pending (no condition at all), the cluster
	// is unchanged, and the event names why and the admin's way out.
	held := func(t *testing.T, cluster, csrName, why string) ctrl.Result {
		t.Helper()
		before := getCluster(t, cluster)
		res := decide(t, csrName)
		assert.Empty(t, csrConditions(t, csrName), "a held CSR is neither approved nor denied")
		after := getCluster(t, cluster)
		assert.Equal(t, before.Spec.HubAcceptsClient, after.Spec.HubAcceptsClient, "hubAcceptsClient unchanged")
		assert.Equal(t, before.Annotations[csr.AutoAcceptedAnnotation], after.Annotations[csr.AutoAcceptedAnnotation], "the hub accepted nothing for it")
		select {
		case ev := <-recorder.Events:
			assert.Contains(t, ev, "AutoApproveHeld")
			assert.Contains(t, ev, why)
			assert.Contains(t, ev, "flotilla accept --clusters "+cluster+" --force")
		default:
			t.Errorf("no event says why CSR %s is held", csrName)
		}
		return res
	}
	// joined: an accepted cluster, granted a minute before its lease was
	// last renewed, at renewed.
	joined := func(t *testing.T, name string, renewed time.Time) {
		t.Helper()
		createAccepted(t, name)
		reconcile(t, name)
		setAcceptedAt(t, name, renewed.Add(-time.Minute))
		setLeaseRenewed(t, name, renewed)
	}

	t.Run("accepted cluster with a live lease: held until stale", func(t *testing.T) {
		const name = "live"
		joined(t, name, time.Now())
		res := held(t, name, createCSR(t, name), "auto-approve gives no certificate for a live cluster")
		assert.Positive(t, res.RequeueAfter, "looked at again when the lease would be stale")
		assert.LessOrEqual(t, res.RequeueAfter, 5*time.Minute)
	})

	t.Run("accepted cluster whose lease is stale: approved", func(t *testing.T) {
		const name = "lost-credential"
		joined(t, name, time.Now().Add(-time.Hour))
		csrName := createCSR(t, name)
		decide(t, csrName)
		assert.True(t, approvedCSR(t, csrName), "a cluster whose agent stopped renewing comes back without an admin")
	})

	t.Run("accepted cluster without a lease: the clock starts at acceptance", func(t *testing.T) {
		const name = "never-heard"
		createAccepted(t, name)
		reconcile(t, name)
		require.NoError(t, admin.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: health.LeaseName}}))
		csrName := createCSR(t, name)
		held(t, name, csrName, "the acceptance, or the hub's start, whichever is latest")
		// Accepted an hour ago and never heard from since: stale.
		setAcceptedAt(t, name, time.Now().Add(-time.Hour))
		decide(t, csrName)
		assert.True(t, approvedCSR(t, csrName))
	})

	t.Run("denied cluster, even with a stale lease: held", func(t *testing.T) {
		const name = "denied-stale"
		joined(t, name, time.Now().Add(-time.Hour))
		mc := getCluster(t, name)
		mc.Spec.HubAcceptsClient = false
		require.NoError(t, admin.Update(ctx, mc))
		reconcile(t, name)
		res := held(t, name, createCSR(t, name), "auto-approve never overrides a deny")
		assert.Zero(t, res.RequeueAfter, "a deny does not wear off")
	})

	t.Run("re-accepted after a deny longer than its grace: held until its agent renews", func(t *testing.T) {
		// The agent is alive all along: denied, it cannot renew its lease
		// (its RoleBindings are gone), so the lease still says when it last
		// could, an hour ago. The admin accepts the cluster again; until the
		// agent's next renewal (up to one lease period later) the lease is
		// older than the grace. Re-acceptance starts the clock again, as
		// acceptance does: an auto-approve user filing a CSR the moment it
		// sees HubAccepted=True gets no certificate for the live cluster.
		const name = "reaccepted"
		joined(t, name, time.Now().Add(-time.Hour))
		mc := getCluster(t, name)
		mc.Spec.HubAcceptsClient = false
		require.NoError(t, admin.Update(ctx, mc))
		reconcile(t, name)
		require.False(t, meta.IsStatusConditionTrue(getCluster(t, name).Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted))
		mc = getCluster(t, name)
		mc.Spec.HubAcceptsClient = true
		require.NoError(t, admin.Update(ctx, mc))
		reconcile(t, name)
		require.True(t, meta.IsStatusConditionTrue(getCluster(t, name).Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted))
		res := held(t, name, createCSR(t, name), "auto-approve gives no certificate for a live cluster")
		assert.Positive(t, res.RequeueAfter, "looked at again one grace after the re-acceptance")
		assert.LessOrEqual(t, res.RequeueAfter, 5*time.Minute)
	})

	t.Run("cluster being deleted: held", func(t *testing.T) {
		const name = "leaving"
		joined(t, name, time.Now().Add(-time.Hour))
		require.NoError(t, admin.Delete(ctx, getCluster(t, name)))
		require.False(t, getCluster(t, name).DeletionTimestamp.IsZero(), "the finalizer keeps it")
		held(t, name, createCSR(t, name), "is being deleted")
	})

	t.Run("no ManagedCluster yet: waits, then the hub accepts it", func(t *testing.T) {
		const name = "not-yet"
		csrName := createCSR(t, name)
		decide(t, csrName)
		assert.Empty(t, csrConditions(t, csrName), "nothing to approve yet")
		require.NoError(t, admin.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}))
		t.Cleanup(func() { forceDelete(name) })
		decide(t, csrName)
		mc := getCluster(t, name)
		assert.True(t, mc.Spec.HubAcceptsClient, "nobody decided on it: the hub accepts it")
		got := &certificatesv1.CertificateSigningRequest{}
		require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: csrName}, got))
		assert.Equal(t, string(got.UID), mc.Annotations[csr.AutoAcceptedAnnotation], "for this CSR")
		reconcile(t, name)
		decide(t, csrName)
		assert.True(t, approvedCSR(t, csrName))

		// Now the cluster is joined and live: a second first CSR for it is held.
		setLeaseRenewed(t, name, time.Now())
		held(t, name, createCSR(t, name), "auto-approve gives no certificate for a live cluster")
	})
}

// setAcceptedAt backdates the cluster's HubAcceptedManagedCluster condition,
// as if the hub had accepted it at that time.
func setAcceptedAt(t *testing.T, cluster string, at time.Time) {
	t.Helper()
	mc := getCluster(t, cluster)
	for i := range mc.Status.Conditions {
		if mc.Status.Conditions[i].Type == clusterv1.ManagedClusterConditionHubAccepted {
			mc.Status.Conditions[i].LastTransitionTime = metav1.NewTime(at)
		}
	}
	require.NoError(t, admin.Status().Update(context.Background(), mc))
}

// setLeaseRenewed sets the renewTime of the cluster's lease (the hub made it
// at acceptance), as its agent would have renewed it at that time.
func setLeaseRenewed(t *testing.T, cluster string, at time.Time) {
	t.Helper()
	lease := &coordinationv1.Lease{}
	require.NoError(t, admin.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: health.LeaseName}, lease))
	renewed := metav1.NewMicroTime(at)
	lease.Spec.RenewTime = &renewed
	require.NoError(t, admin.Update(context.Background(), lease))
}

func csrConditions(t *testing.T, name string) []certificatesv1.CertificateSigningRequestCondition {
	t.Helper()
	got := &certificatesv1.CertificateSigningRequest{}
	require.NoError(t, admin.Get(context.Background(), client.ObjectKey{Name: name}, got))
	return got.Status.Conditions
}

func forceDelete(name string) {
	ctx := context.Background()
	mc := &clusterv1.ManagedCluster{}
	if admin.Get(ctx, client.ObjectKey{Name: name}, mc) == nil {
		mc.Finalizers = nil
		_ = admin.Update(ctx, mc)
		_ = admin.Delete(ctx, mc)
	}
}

// grantCSRCreate lets user create CSRs (Kubernetes' own node-bootstrapper role).
func grantCSRCreate(t *testing.T, user string) {
	t.Helper()
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-csr-create-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	require.NoError(t, client.IgnoreAlreadyExists(admin.Create(context.Background(), crb)))
}

// createCSR files a valid first CSR for cluster as autoJoiner; it returns its name.
func createCSR(t *testing.T, cluster string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	req, err := registration.BuildCSR(cluster, "a1", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0)
	require.NoError(t, err)
	cfg := rest.CopyConfig(hubConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: autoJoiner, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	require.NoError(t, c.Create(context.Background(), req))
	t.Cleanup(func() { _ = admin.Delete(context.Background(), req) })
	return req.Name
}

func approvedCSR(t *testing.T, name string) bool {
	t.Helper()
	got := &certificatesv1.CertificateSigningRequest{}
	require.NoError(t, admin.Get(context.Background(), client.ObjectKey{Name: name}, got))
	for _, c := range got.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved {
			return true
		}
	}
	return false
}
