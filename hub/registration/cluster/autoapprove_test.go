package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub/registration/csr"
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
