package addons_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/example"
	"flotilla.dev/flotilla/addons/ops"
	"flotilla.dev/flotilla/klusterlet/registration"
)

// clusterAgent is cluster i's klusterlet identity on the hub, read from its secret.
func clusterAgent(t *testing.T, i int) kubernetes.Interface {
	t.Helper()
	sec, err := spoke(i).CoreV1().Secrets(registration.DefaultAgentNamespace).Get(context.Background(), registration.HubKubeconfigSecret, metav1.GetOptions{})
	require.NoError(t, err)
	kc, err := clientcmd.Load(sec.Data["kubeconfig"])
	require.NoError(t, err)
	cl := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: cl.Server, TLSClientConfig: rest.TLSClientConfig{
		CAData: cl.CertificateAuthorityData, CertData: sec.Data["tls.crt"], KeyData: sec.Data["tls.key"]}})
}

func addonCSR(t *testing.T, labelCluster, labelAddon, cn string, orgs ...string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}, key)
	require.NoError(t, err)
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "addon-test-", Labels: map[string]string{
			"open-cluster-management.io/cluster-name": labelCluster, "open-cluster-management.io/addon-name": labelAddon}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}},
	}
}

func eventuallyDenied(t *testing.T, cs kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest) string {
	t.Helper()
	created, err := cs.CertificatesV1().CertificateSigningRequests().Create(context.Background(), csr, metav1.CreateOptions{})
	require.NoError(t, err)
	var msg string
	require.Eventually(t, func() bool {
		got, err := kubernetes.NewForConfigOrDie(env.Hub.Config).CertificatesV1().CertificateSigningRequests().Get(context.Background(), created.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range got.Status.Conditions {
			if c.Type == certificatesv1.CertificateApproved {
				t.Fatalf("CSR %s was approved: %s", created.Name, c.Message)
			}
			if c.Type == certificatesv1.CertificateDenied {
				msg = c.Message
				return true
			}
		}
		return false
	}, timeout, tick)
	return msg
}

// TestAddonCSRRefusals: with the example addon enabled on cluster2 only, CSRs
// naming another cluster or another addon are denied, whoever files them.
func TestAddonCSRRefusals(t *testing.T) {
	ctx := context.Background()
	_, err := ops.Enable(ctx, hubCli, ops.EnableOptions{Names: []string{example.Name}, Clusters: []string{"cluster2"}})
	require.NoError(t, err)
	t.Cleanup(func() { disable(t, "cluster2", example.Name) })
	eventuallyCondition(t, "cluster2", example.Name, addonv1alpha1.ManagedClusterAddOnRegistrationApplied, metav1.ConditionTrue)
	c2 := "system:open-cluster-management:cluster:cluster2:addon:example"
	subject2 := c2 + ":agent:example-agent"
	groups2 := []string{c2, "system:open-cluster-management:addon:example"}

	// cluster1's agent asks for cluster2's addon identity.
	msg := eventuallyDenied(t, clusterAgent(t, 0), addonCSR(t, "cluster2", example.Name, subject2, groups2...))
	assert.Contains(t, msg, "not an agent of cluster cluster2")
	// cluster2's own agent, for an addon not enabled on it.
	other := "system:open-cluster-management:cluster:cluster2:addon:other"
	msg = eventuallyDenied(t, clusterAgent(t, 1), addonCSR(t, "cluster2", "other", other+":agent:a", other, "system:open-cluster-management:addon:other"))
	assert.Contains(t, msg, "no ManagedClusterAddOn other")
	// cluster2's own agent, labelled for its addon but asking for cluster1's identity.
	c1 := "system:open-cluster-management:cluster:cluster1:addon:example"
	msg = eventuallyDenied(t, clusterAgent(t, 1), addonCSR(t, "cluster2", example.Name, c1+":agent:example-agent", c1, "system:open-cluster-management:addon:example"))
	assert.Contains(t, msg, "subject")
	// cluster2's own agent, for the right addon but an agent name the addon did not declare.
	msg = eventuallyDenied(t, clusterAgent(t, 1), addonCSR(t, "cluster2", example.Name, c2+":agent:someone-else", groups2...))
	assert.Contains(t, msg, "matches no registration")
}

// TestBadAddonsLeaveOthersAlone: an addon whose manifests fail to render and one
// asking for cluster-wide rights get conditions saying so; the example addon
// on the same cluster installs as usual.
func TestBadAddonsLeaveOthersAlone(t *testing.T) {
	ctx := context.Background()
	names := []string{"broken", "greedy", example.Name}
	_, err := ops.Enable(ctx, hubCli, ops.EnableOptions{Names: names, Clusters: []string{"cluster2"}})
	require.NoError(t, err)
	t.Cleanup(func() { disable(t, "cluster2", names...) })
	broken := eventuallyReason(t, "cluster2", "broken", addonv1alpha1.ManagedClusterAddOnManifestApplied, addonv1alpha1.AddonManifestAppliedReasonManifestsApplyFailed)
	assert.Equal(t, metav1.ConditionFalse, broken.Status)
	assert.Contains(t, broken.Message, "template value .Values.image is missing")

	greedy := eventuallyCondition(t, "cluster2", "greedy", addonv1alpha1.ManagedClusterAddOnRegistrationApplied, metav1.ConditionFalse)
	assert.Equal(t, addonv1alpha1.RegistrationAppliedSetPermissionFailed, greedy.Reason)
	assert.Contains(t, greedy.Message, "cluster-scoped \"clusterroles\"")
	var bindings rbacv1.RoleBindingList
	require.NoError(t, hubCli.List(ctx, &bindings, client.InNamespace("cluster2"), client.MatchingLabels{"open-cluster-management.io/addon-name": "greedy"}))
	assert.Empty(t, bindings.Items, "nothing is granted to an addon asking for cluster-wide rights")

	eventuallyCondition(t, "cluster2", example.Name, addonv1alpha1.ManagedClusterAddOnManifestApplied, metav1.ConditionTrue)

	// Unknown addon or cluster: refused before anything is written.
	_, err = ops.Enable(ctx, hubCli, ops.EnableOptions{Names: []string{"nope"}, Clusters: []string{"cluster9"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `addon "nope" is not on the hub`)
	assert.Contains(t, err.Error(), `cluster "cluster9" is not a managed cluster`)
	var mcas addonv1alpha1.ManagedClusterAddOnList
	require.NoError(t, hubCli.List(ctx, &mcas, client.InNamespace("cluster9")))
	assert.Empty(t, mcas.Items)
}
