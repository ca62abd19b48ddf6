package registration_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/klusterlet/registration"
)

// TestFullFlow joins cluster1 and cluster2 through join -> CSR -> accept, then
// checks every hub object and that each cluster's credential is confined to itself.
func TestFullFlow(t *testing.T) {
	ctx := context.Background()
	a1 := newAgent(t, env.Clusters[0], "cluster1", "agent-flow").start()
	a2 := newAgent(t, env.Clusters[1], "cluster2", "agent-flow").start()

	// Before accept: the ManagedClusters and CSRs exist, no certificate is issued.
	for _, name := range []string{"cluster1", "cluster2"} {
		require.Eventually(t, func() bool { return len(clusterCSRs(t, name)) == 1 && hubCluster(t, name) != nil }, timeout, tick)
		mc := hubCluster(t, name)
		assert.False(t, mc.Spec.HubAcceptsClient)
		assert.Equal(t, int32(1), mc.Spec.LeaseDurationSeconds)
		require.Eventually(t, func() bool { return hasTaint(hubCluster(t, name), clusterv1.ManagedClusterTaintUnreachable) }, timeout, tick,
			"a cluster not yet available is tainted unreachable")
	}
	require.Never(t, func() bool {
		csr := clusterCSRs(t, "cluster1")[0]
		return approved(&csr) || len(csr.Status.Certificate) > 0
	}, 3*time.Second, tick, "an un-accepted cluster gets no certificate")
	_, err := kube(a1.spoke.Config).CoreV1().Secrets(a1.ns).Get(ctx, registration.HubKubeconfigSecret, metav1.GetOptions{})
	if err == nil {
		sec, _ := kube(a1.spoke.Config).CoreV1().Secrets(a1.ns).Get(ctx, registration.HubKubeconfigSecret, metav1.GetOptions{})
		assert.Empty(t, sec.Data["tls.crt"], "no credential before accept")
	}

	acceptClusters(t, "cluster1", "cluster2")
	for _, name := range []string{"cluster1", "cluster2"} {
		waitCondition(t, name, clusterv1.ManagedClusterConditionHubAccepted, metav1.ConditionTrue, "HubClusterAdminAccepted")
		waitCondition(t, name, clusterv1.ManagedClusterConditionJoined, metav1.ConditionTrue)
		waitCondition(t, name, clusterv1.ManagedClusterConditionAvailable, metav1.ConditionTrue, "ManagedClusterAvailable")
		require.Eventually(t, func() bool { return len(hubCluster(t, name).Spec.Taints) == 0 }, timeout, tick, "taints go when Available")
		mc := hubCluster(t, name)
		assert.NotEmpty(t, mc.Status.Version.Kubernetes)
		assert.Contains(t, mc.Status.Capacity, clusterv1.ResourceCPU)
		assert.Contains(t, mc.Finalizers, clusterv1.ManagedClusterFinalizer)
		ns, err := kube(env.Hub.Config).CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, name, ns.Labels["open-cluster-management.io/cluster-name"])
		_, err = kube(env.Hub.Config).RbacV1().ClusterRoleBindings().Get(ctx, ocm.ClusterRoleName(name), metav1.GetOptions{})
		assert.NoError(t, err)
		for _, rb := range []string{ocm.RegistrationRoleBindingName(name), ocm.WorkRoleBindingName(name)} {
			_, err = kube(env.Hub.Config).RbacV1().RoleBindings(name).Get(ctx, rb, metav1.GetOptions{})
			assert.NoError(t, err, rb)
		}
		_, err = kube(env.Hub.Config).CoordinationV1().Leases(name).Get(ctx, "managed-cluster-lease", metav1.GetOptions{})
		assert.NoError(t, err)
		csrs := clusterCSRs(t, name)
		require.Len(t, csrs, 1)
		assert.True(t, approved(&csrs[0]))
	}
	// Accepting again is a no-op that succeeds.
	acceptClusters(t, "cluster1")

	t.Run("credential is confined to its own cluster", func(t *testing.T) {
		c1 := a1.credential()
		cs, cc, wc := kube(c1), clusters(c1), workclient.NewForConfigOrDie(c1)
		forbidden := func(what string, err error) {
			t.Helper()
			assert.True(t, apierrors.IsForbidden(err), "%s: want 403, got %v", what, err)
		}
		// Its own objects work.
		_, err := cc.ClusterV1().ManagedClusters().Get(ctx, "cluster1", metav1.GetOptions{})
		require.NoError(t, err)
		_, err = cs.CoordinationV1().Leases("cluster1").Get(ctx, "managed-cluster-lease", metav1.GetOptions{})
		require.NoError(t, err)
		_, err = wc.WorkV1().ManifestWorks("cluster1").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)

		// Nothing of cluster2.
		_, err = cc.ClusterV1().ManagedClusters().Get(ctx, "cluster2", metav1.GetOptions{})
		forbidden("get cluster2", err)
		mc2 := hubCluster(t, "cluster2")
		mc2.Status.Conditions = nil
		_, err = cc.ClusterV1().ManagedClusters().UpdateStatus(ctx, mc2, metav1.UpdateOptions{})
		forbidden("update cluster2 status", err)
		mc2.Spec.Taints = nil
		_, err = cc.ClusterV1().ManagedClusters().Update(ctx, mc2, metav1.UpdateOptions{})
		forbidden("update cluster2", err)
		_, err = cc.ClusterV1().ManagedClusters().List(ctx, metav1.ListOptions{})
		forbidden("list all ManagedClusters", err)
		_, err = cs.CoordinationV1().Leases("cluster2").Get(ctx, "managed-cluster-lease", metav1.GetOptions{})
		forbidden("get cluster2 lease", err)
		_, err = wc.WorkV1().ManifestWorks("cluster2").List(ctx, metav1.ListOptions{})
		forbidden("list cluster2 works", err)
		_, err = wc.WorkV1().ManifestWorks("cluster2").Create(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "evil"}}, metav1.CreateOptions{})
		forbidden("create a work for cluster2", err)
		_, err = wc.WorkV1().ManifestWorks("cluster1").Create(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "self"}}, metav1.CreateOptions{})
		forbidden("create a work for itself", err)
		_, err = cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
		forbidden("list secrets cluster-wide", err)
		_, err = cs.CoreV1().Secrets("cluster1").List(ctx, metav1.ListOptions{})
		forbidden("list secrets in its own namespace", err)
		err = cs.CoreV1().Namespaces().Delete(ctx, "cluster2", metav1.DeleteOptions{})
		forbidden("delete cluster2's namespace", err)

		// On its own ManagedCluster it may publish its addresses, nothing else.
		err = updateCluster(c1, "cluster1", func(mc *clusterv1.ManagedCluster) {
			if mc.Labels == nil {
				mc.Labels = map[string]string{}
			}
			mc.Labels["env"] = "prod"
		})
		require.Error(t, err, "label itself into placements")
		assert.Contains(t, err.Error(), "may change only spec.managedClusterClientConfigs")
		err = updateCluster(c1, "cluster1", func(mc *clusterv1.ManagedCluster) { mc.Spec.LeaseDurationSeconds = 3600 })
		require.Error(t, err, "stretch its lease")
		require.NoError(t, updateCluster(c1, "cluster1", func(mc *clusterv1.ManagedCluster) {
			mc.Spec.ManagedClusterClientConfigs = append(mc.Spec.ManagedClusterClientConfigs, clusterv1.ClientConfig{URL: "https://cluster1.example:6443"})
		}))

		// It cannot approve CSRs (not even its own) nor accept clusters.
		pending := clusterCSRs(t, "cluster1")[0]
		pending.Status.Conditions = append(pending.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Evil"})
		_, err = cs.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, pending.Name, &pending, metav1.UpdateOptions{})
		forbidden("approve a CSR", err)
	})

	t.Run("forged CSRs are never approved", func(t *testing.T) {
		c1 := kube(a1.credential())
		boot := kube(bootstrapConfig(t))
		// cluster1's credential asks for a certificate as cluster2's agent.
		forgedCN := createCSR(t, c1, "cluster2", "cluster2", "evil", nil)
		// ...or for its own label with cluster2's group in O.
		forgedO := createCSR(t, c1, "cluster1", "cluster1", "evil", []string{ocm.ClusterGroupName("cluster1"), ocm.ClusterGroupName("cluster2")})
		// The bootstrap identity asks for cluster1's agent under cluster2's label.
		forgedBoot := createCSR(t, boot, "cluster2", "cluster1", "evil", nil)
		// accept must not approve any of them either.
		acceptClusters(t, "cluster2", "cluster1")
		require.Never(t, func() bool {
			for _, name := range []string{forgedCN, forgedO, forgedBoot} {
				csr, err := kube(env.Hub.Config).CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
				require.NoError(t, err)
				if approved(csr) || len(csr.Status.Certificate) > 0 {
					return true
				}
			}
			return false
		}, 3*time.Second, tick)
		// The hub says which check failed, on the CSR's events.
		require.Eventually(t, func() bool {
			evs, err := kube(env.Hub.Config).EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=" + forgedO})
			require.NoError(t, err)
			for _, ev := range evs.Items {
				if ev.Reason == "CSRCheckFailed" && strings.Contains(ev.Note, "subject-organization") {
					return true
				}
			}
			return false
		}, timeout, tick)
	})

	t.Run("setting hubAcceptsClient needs the accept permission", func(t *testing.T) {
		// alice may update ManagedClusters but not managedclusters/accept.
		grant(t, "alice", rbacv1.PolicyRule{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclusters"}, Verbs: []string{"get", "create", "update"}})
		alice := rest.CopyConfig(env.Hub.Config)
		alice.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "alice-cluster"}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
		// (Eventually: the RBAC authorizer sees the new binding after a moment.)
		require.Eventually(t, func() bool {
			_, err := clusters(alice).ClusterV1().ManagedClusters().Create(ctx, mc, metav1.CreateOptions{})
			require.Error(t, err, "creating an accepted cluster")
			return strings.Contains(err.Error(), `user "alice" cannot accept ManagedCluster "alice-cluster"`)
		}, timeout, tick)

		mc.Spec.HubAcceptsClient = false
		_, err := clusters(alice).ClusterV1().ManagedClusters().Create(ctx, mc, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = clusters(env.Hub.Config).ClusterV1().ManagedClusters().Delete(ctx, "alice-cluster", metav1.DeleteOptions{})
		})
		err = updateCluster(alice, "alice-cluster", func(mc *clusterv1.ManagedCluster) { mc.Spec.HubAcceptsClient = true })
		require.Error(t, err)
		assert.Contains(t, err.Error(), "requires permission to update managedclusters/accept")

		// With the permission, alice may.
		grant(t, "alice", rbacv1.PolicyRule{APIGroups: []string{"register.open-cluster-management.io"}, Resources: []string{"managedclusters/accept"}, Verbs: []string{"update"}})
		require.Eventually(t, func() bool {
			return updateCluster(alice, "alice-cluster", func(mc *clusterv1.ManagedCluster) { mc.Spec.HubAcceptsClient = true }) == nil
		}, timeout, tick)

		// Joining a cluster set needs managedclustersets/join for that set.
		err = updateCluster(alice, "alice-cluster", func(mc *clusterv1.ManagedCluster) {
			mc.Labels = map[string]string{"cluster.open-cluster-management.io/clusterset": "prod"}
		})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `cannot add ManagedCluster "alice-cluster" to cluster set "prod"`)

		// A name that is not a DNS label is refused.
		bad := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "bad.name"}}
		_, err = clusters(env.Hub.Config).ClusterV1().ManagedClusters().Create(ctx, bad, metav1.CreateOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "not a DNS label")
	})

	t.Run("bootstrap identity holds exactly the bootstrap permissions", func(t *testing.T) {
		boot := bootstrapConfig(t)
		cs, cc := kube(boot), clusters(boot)
		forbidden := func(what string, err error) {
			t.Helper()
			assert.True(t, apierrors.IsForbidden(err), "%s: want 403, got %v", what, err)
		}
		_, err := cc.ClusterV1().ManagedClusters().Get(ctx, "cluster1", metav1.GetOptions{})
		require.NoError(t, err, "may read ManagedClusters")
		_, err = cs.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
		require.NoError(t, err, "may read cluster-info")
		err = updateCluster(boot, "cluster2", func(mc *clusterv1.ManagedCluster) { mc.Spec.Taints = nil })
		forbidden("update a ManagedCluster", err)
		mc := hubCluster(t, "cluster2")
		_, err = cc.ClusterV1().ManagedClusters().UpdateStatus(ctx, mc, metav1.UpdateOptions{})
		forbidden("update a ManagedCluster's status", err)
		err = cc.ClusterV1().ManagedClusters().Delete(ctx, "cluster2", metav1.DeleteOptions{})
		forbidden("delete a ManagedCluster", err)
		_, err = cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
		forbidden("list secrets", err)
		_, err = cs.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
		forbidden("list configmaps", err)
		csr := clusterCSRs(t, "cluster2")[0]
		_, err = cs.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, &csr, metav1.UpdateOptions{})
		forbidden("approve a CSR", err)
		_, err = cc.ClusterV1().ManagedClusters().Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "self-accepted"},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}, metav1.CreateOptions{})
		require.Error(t, err, "create an accepted cluster")
		assert.Contains(t, err.Error(), "cannot accept ManagedCluster")
	})

	t.Run("get clusters lists both", func(t *testing.T) {
		list, err := clusters(env.Hub.Config).ClusterV1().ManagedClusters().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		names := []string{}
		for _, c := range list.Items {
			names = append(names, c.Name)
		}
		assert.Subset(t, names, []string{"cluster1", "cluster2"})
	})
	_ = a2
}

// bootstrapConfig is a hub config with the bootstrap token.
func bootstrapConfig(t *testing.T) *rest.Config {
	return &rest.Config{Host: env.Hub.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: env.Hub.CAPEM}}
}

// createCSR creates a CSR labelled for cluster `label` with subject CN for
// (cluster, agent) and the given O (default the OCM groups of cluster).
func createCSR(t *testing.T, cs kubernetes.Interface, label, cluster, agentName string, orgs []string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	subject := registration.Subject(cluster, agentName)
	if orgs != nil {
		subject.Organization = orgs
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	require.NoError(t, err)
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: label + "-forged-", Labels: map[string]string{ocm.ClusterNameLabel: label}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
	created, err := cs.CertificatesV1().CertificateSigningRequests().Create(context.Background(), csr, metav1.CreateOptions{})
	require.NoError(t, err)
	return created.Name
}

// grant gives user a ClusterRole with rule (added to what it has).
func grant(t *testing.T, user string, rule rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	name := "test-" + user + "-" + strings.ReplaceAll(strings.Join(rule.Resources, "-"), "/", "-")
	cs := kube(env.Hub.Config)
	_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// updateCluster applies mutate to a ManagedCluster as cfg's user, retrying conflicts.
func updateCluster(cfg *rest.Config, name string, mutate func(*clusterv1.ManagedCluster)) error {
	api := clusters(cfg).ClusterV1().ManagedClusters()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc, err := api.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(mc)
		_, err = api.Update(context.Background(), mc, metav1.UpdateOptions{})
		return err
	})
}
