package registration_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/hub/registration/accept"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/klusterlet/registration"
)

// TestDenyEndsAccess: after hubAcceptsClient goes back to false the agent may
// only read its ManagedCluster.
func TestDenyEndsAccess(t *testing.T) {
	ctx := context.Background()
	a := newAgent(t, env.Clusters[0], "deny-me", "agent-deny").start()
	acceptClusters(t, "deny-me")
	waitCondition(t, "deny-me", clusterv1.ManagedClusterConditionJoined, metav1.ConditionTrue)
	cred := a.credential()
	a.stop()

	require.NoError(t, updateCluster(env.Hub.Config, "deny-me", func(mc *clusterv1.ManagedCluster) { mc.Spec.HubAcceptsClient = false }))
	waitCondition(t, "deny-me", clusterv1.ManagedClusterConditionHubAccepted, metav1.ConditionFalse, "HubClusterAdminDenied")

	require.Eventually(t, func() bool {
		_, err := kube(cred).CoordinationV1().Leases("deny-me").Get(ctx, "managed-cluster-lease", metav1.GetOptions{})
		return apierrors.IsForbidden(err)
	}, timeout, tick, "the lease is out of reach")
	_, err := workclient.NewForConfigOrDie(cred).WorkV1().ManifestWorks("deny-me").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "works are out of reach: %v", err)
	got, err := clusters(cred).ClusterV1().ManagedClusters().Get(ctx, "deny-me", metav1.GetOptions{})
	require.NoError(t, err, "it may still read its own ManagedCluster")
	_, err = clusters(cred).ClusterV1().ManagedClusters().UpdateStatus(ctx, got, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsForbidden(err), "status is out of reach: %v", err)
	_, err = kube(cred).CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "CSRs are out of reach: %v", err)
	_, err = kube(env.Hub.Config).RbacV1().RoleBindings("deny-me").Get(ctx, ocm.WorkRoleBindingName("deny-me"), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "work RoleBinding removed")
}

// TestStopAndRestartAgent: a silent agent makes its cluster Unknown and tainted;
// restarting it recovers without a new CSR.
func TestStopAndRestartAgent(t *testing.T) {
	a := newAgent(t, env.Clusters[1], "flaky", "agent-flaky").start()
	acceptClusters(t, "flaky")
	waitCondition(t, "flaky", clusterv1.ManagedClusterConditionAvailable, metav1.ConditionTrue)
	require.Eventually(t, func() bool { return len(hubCluster(t, "flaky").Spec.Taints) == 0 }, timeout, tick)

	a.stop()
	waitCondition(t, "flaky", clusterv1.ManagedClusterConditionAvailable, metav1.ConditionUnknown, "ManagedClusterLeaseUpdateStopped")
	require.Eventually(t, func() bool { return hasTaint(hubCluster(t, "flaky"), clusterv1.ManagedClusterTaintUnreachable) }, timeout, tick)

	a.start()
	waitCondition(t, "flaky", clusterv1.ManagedClusterConditionAvailable, metav1.ConditionTrue)
	require.Eventually(t, func() bool { return len(hubCluster(t, "flaky").Spec.Taints) == 0 }, timeout, tick)
	assert.Len(t, clusterCSRs(t, "flaky"), 1, "a restart with a valid credential makes no CSR")
}

// TestRestartMidBootstrap: an agent stopped while its CSR is pending picks the
// same CSR up again.
func TestRestartMidBootstrap(t *testing.T) {
	a := newAgent(t, env.Clusters[0], "midboot", "agent-midboot").start()
	require.Eventually(t, func() bool { return len(clusterCSRs(t, "midboot")) == 1 }, timeout, tick)
	a.stop()
	a.start()
	a.stop()
	a.start()
	acceptClusters(t, "midboot")
	waitCondition(t, "midboot", clusterv1.ManagedClusterConditionJoined, metav1.ConditionTrue)
	assert.Len(t, clusterCSRs(t, "midboot"), 1, "no duplicate CSRs")
	a.credential()
}

// TestRotation: with short-lived certificates the agent renews (auto-approved
// renewal CSRs) and the cluster stays joined.
func TestRotation(t *testing.T) {
	a := newAgent(t, env.Clusters[1], "rotator", "agent-rotator", func(o *registration.Options) {
		o.ClientCertExpirationSeconds = 600
		o.RotationFraction = 0.99 // renew right away, again and again
	}).start()
	acceptClusters(t, "rotator")
	require.Eventually(t, func() bool {
		n := 0
		for _, csr := range clusterCSRs(t, "rotator") {
			if approved(&csr) && len(csr.Status.Certificate) > 0 {
				n++
			}
		}
		return n >= 3
	}, timeout, tick, "two renewals after the first certificate")
	waitCondition(t, "rotator", registration.ConditionCertificateRotated, metav1.ConditionTrue, registration.ReasonCertificateUpdated)
	waitCondition(t, "rotator", clusterv1.ManagedClusterConditionJoined, metav1.ConditionTrue)
	waitCondition(t, "rotator", clusterv1.ManagedClusterConditionAvailable, metav1.ConditionTrue)
	for _, csr := range clusterCSRs(t, "rotator")[1:] {
		if approved(&csr) {
			assert.Equal(t, "AutoApprovedByHubCSRApprovingController", approvalReason(&csr), "renewals are approved by the hub")
		}
	}
	a.stop()
	// The stored credential still works after the agent stopped mid-rotation.
	_, err := clusters(a.credential()).ClusterV1().ManagedClusters().Get(context.Background(), "rotator", metav1.GetOptions{})
	require.NoError(t, err)
}

func approvalReason(csr *certificatesv1.CertificateSigningRequest) string {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved {
			return c.Reason
		}
	}
	return ""
}

// TestDeleteCleansUp: deleting a ManagedCluster removes its works, RBAC and
// namespace, then the ManagedCluster itself.
func TestDeleteCleansUp(t *testing.T) {
	ctx := context.Background()
	a := newAgent(t, env.Clusters[0], "doomed", "agent-doomed").start()
	acceptClusters(t, "doomed")
	waitCondition(t, "doomed", clusterv1.ManagedClusterConditionJoined, metav1.ConditionTrue)
	a.stop()
	work := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: "doomed",
		Finalizers: []string{"cluster.open-cluster-management.io/manifest-work-cleanup"}},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"}}`)}}}}}}
	_, err := workclient.NewForConfigOrDie(env.Hub.Config).WorkV1().ManifestWorks("doomed").Create(ctx, work, metav1.CreateOptions{})
	require.NoError(t, err)
	// The agent is gone: the hub releases the work itself once the cluster is not Available.
	waitCondition(t, "doomed", clusterv1.ManagedClusterConditionAvailable, metav1.ConditionUnknown)

	require.NoError(t, clusters(env.Hub.Config).ClusterV1().ManagedClusters().Delete(ctx, "doomed", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return hubCluster(t, "doomed") == nil }, timeout, tick, "ManagedCluster gone")
	hubKube := kube(env.Hub.Config)
	_, err = hubKube.RbacV1().ClusterRoles().Get(ctx, ocm.ClusterRoleName("doomed"), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "ClusterRole gone: %v", err)
	_, err = hubKube.RbacV1().ClusterRoleBindings().Get(ctx, ocm.ClusterRoleName("doomed"), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "ClusterRoleBinding gone: %v", err)
	require.Eventually(t, func() bool {
		_, err := hubKube.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, timeout, tick, "namespace gone (with its works, leases and RoleBindings)")
}

// TestFallbackToBootstrap: when the hub no longer recognises the stored
// credential, the agent asks again with the bootstrap kubeconfig; after the admin
// accepts again the cluster is back.
func TestFallbackToBootstrap(t *testing.T) {
	ctx := context.Background()
	a := newAgent(t, env.Clusters[1], "fallback", "agent-fallback").start()
	acceptClusters(t, "fallback")
	waitCondition(t, "fallback", clusterv1.ManagedClusterConditionJoined, metav1.ConditionTrue)
	a.stop()

	// Replace the credential with a certificate for the same subject that the hub
	// never issued (as after a hub CA change).
	secrets := kube(a.spoke.Config).CoreV1().Secrets(a.ns)
	sec, err := secrets.Get(ctx, registration.HubKubeconfigSecret, metav1.GetOptions{})
	require.NoError(t, err)
	certPEM, keyPEM := selfSigned(t, string(sec.Data["cluster-name"]), string(sec.Data["agent-name"]))
	sec.Data["tls.crt"], sec.Data["tls.key"] = certPEM, keyPEM
	_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
	require.NoError(t, err)

	a.start()
	require.Eventually(t, func() bool { return len(clusterCSRs(t, "fallback")) == 2 }, timeout, tick, "a new bootstrap CSR")
	var out bytes.Buffer
	require.NoError(t, accept.Accept(ctx, accept.Options{Config: env.Hub.Config, Clusters: []string{"fallback"}, Progress: &out}))
	assert.Contains(t, out.String(), "--force", "a joined cluster asking again needs --force")
	pending := 0
	for _, r := range clusterCSRs(t, "fallback") {
		if !approved(&r) {
			pending++
		}
	}
	assert.Equal(t, 1, pending, "without --force the new bootstrap CSR stays pending")
	require.NoError(t, accept.Accept(ctx, accept.Options{Config: env.Hub.Config, Clusters: []string{"fallback"}, Force: true}))
	require.Eventually(t, func() bool {
		sec, err := secrets.Get(ctx, registration.HubKubeconfigSecret, metav1.GetOptions{})
		return err == nil && !bytes.Equal(sec.Data["tls.crt"], certPEM) && len(sec.Data["tls.crt"]) > 0
	}, timeout, tick)
	_, err = clusters(a.credential()).ClusterV1().ManagedClusters().Get(ctx, "fallback", metav1.GetOptions{})
	require.NoError(t, err, "the new credential works")
	waitCondition(t, "fallback", clusterv1.ManagedClusterConditionAvailable, metav1.ConditionTrue)
}

// selfSigned makes a certificate and key for an agent's subject, signed by nobody the hub trusts.
func selfSigned(t *testing.T, cluster, agent string) ([]byte, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: registration.Subject(cluster, agent),
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// TestClusterClaims: reserved and custom claims reach the hub; spoke-only ones do not.
func TestClusterClaims(t *testing.T) {
	ctx := context.Background()
	spoke := env.Clusters[1]
	spokeClaims := clusters(spoke.Config).ClusterV1alpha1().ClusterClaims()
	for _, c := range []clusterv1alpha1.ClusterClaim{
		{ObjectMeta: metav1.ObjectMeta{Name: "id.k8s.io"}, Spec: clusterv1alpha1.ClusterClaimSpec{Value: "cluster-2-id"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "region.example.com"}, Spec: clusterv1alpha1.ClusterClaimSpec{Value: "eu-west"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "internal.example.com", Labels: map[string]string{"open-cluster-management.io/spoke-only": ""}},
			Spec: clusterv1alpha1.ClusterClaimSpec{Value: "secret-ish"}},
	} {
		_, err := spokeClaims.Create(ctx, &c, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = spokeClaims.Delete(context.Background(), c.Name, metav1.DeleteOptions{}) })
	}
	newAgent(t, spoke, "claimer", "agent-claimer").start()
	acceptClusters(t, "claimer")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		mc := hubCluster(t, "claimer")
		assert.Equal(c, []clusterv1.ManagedClusterClaim{
			{Name: "id.k8s.io", Value: "cluster-2-id"},
			{Name: "region.example.com", Value: "eu-west"},
		}, mc.Status.ClusterClaims)
		assert.NotEmpty(c, mc.Status.Version.Kubernetes)
		assert.Contains(c, mc.Status.Allocatable, clusterv1.ResourceMemory)
	}, timeout, tick)
}

// TestDeletedClusterAsksAgain: when the hub deletes a cluster whose agent still
// runs, the agent registers again and waits to be accepted; accepting brings it back.
func TestDeletedClusterAsksAgain(t *testing.T) {
	ctx := context.Background()
	newAgent(t, env.Clusters[0], "phoenix", "agent-phoenix").start()
	acceptClusters(t, "phoenix")
	waitCondition(t, "phoenix", clusterv1.ManagedClusterConditionJoined, metav1.ConditionTrue)
	first := hubCluster(t, "phoenix").UID

	require.NoError(t, clusters(env.Hub.Config).ClusterV1().ManagedClusters().Delete(ctx, "phoenix", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		mc := hubCluster(t, "phoenix")
		return mc != nil && mc.UID != first && len(clusterCSRs(t, "phoenix")) == 2
	}, timeout, tick, "a new ManagedCluster and a new CSR")
	assert.False(t, hubCluster(t, "phoenix").Spec.HubAcceptsClient, "it is not accepted again by itself")

	acceptClusters(t, "phoenix")
	waitCondition(t, "phoenix", clusterv1.ManagedClusterConditionJoined, metav1.ConditionTrue)
	waitCondition(t, "phoenix", clusterv1.ManagedClusterConditionAvailable, metav1.ConditionTrue)
}

// TestReacceptWithForgedCSR: a denied cluster that holds its certificate is
// accepted again without any CSR, although a token holder filed a bootstrap
// CSR under its name meanwhile; that CSR is reported, never approved, and the
// cluster works again with its old certificate.
func TestReacceptWithForgedCSR(t *testing.T) {
	ctx := context.Background()
	a := newAgent(t, env.Clusters[1], "reaccept-me", "agent-reaccept").start()
	acceptClusters(t, "reaccept-me")
	waitCondition(t, "reaccept-me", clusterv1.ManagedClusterConditionJoined, metav1.ConditionTrue)
	cred := a.credential()

	require.NoError(t, updateCluster(env.Hub.Config, "reaccept-me", func(mc *clusterv1.ManagedCluster) { mc.Spec.HubAcceptsClient = false }))
	waitCondition(t, "reaccept-me", clusterv1.ManagedClusterConditionHubAccepted, metav1.ConditionFalse, "HubClusterAdminDenied")
	forged := createCSR(t, kube(bootstrapConfig(t)), "reaccept-me", "reaccept-me", "evil", nil)

	var out bytes.Buffer
	require.NoError(t, accept.Accept(ctx, accept.Options{Config: env.Hub.Config, Clusters: []string{"reaccept-me"}, Progress: &out}),
		"a pending forged CSR does not block a re-accept")
	assert.Contains(t, out.String(), "accepted cluster reaccept-me")
	assert.Contains(t, out.String(), "no CSR was approved")
	assert.Contains(t, out.String(), forged, "the pending CSR is reported")
	waitCondition(t, "reaccept-me", clusterv1.ManagedClusterConditionHubAccepted, metav1.ConditionTrue)
	r, err := kube(env.Hub.Config).CertificatesV1().CertificateSigningRequests().Get(ctx, forged, metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, approved(r), "the forged CSR stays unapproved")
	require.Eventually(t, func() bool {
		_, err := kube(cred).CoordinationV1().Leases("reaccept-me").Get(ctx, registration.LeaseName, metav1.GetOptions{})
		return err == nil
	}, timeout, tick, "the old certificate works again")
}
