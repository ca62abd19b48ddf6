package addons_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"flotilla.dev/flotilla/addons/approve"
	"flotilla.dev/flotilla/addons/ops"
	"flotilla.dev/flotilla/internal/ocm"
)

// customSigner is the signer of the "signed" test addon's CustomSigner registration.
const customSigner = "flotilla.dev/test-signer"

func parsePEMCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	require.NotNil(t, block, "PEM certificate")
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert
}

// TestCustomSignerRegistration: the "signed" addon declares a CustomSigner
// registration (signer flotilla.dev/test-signer, CN signed-client). Enabled on
// cluster1, the klusterlet's CSR is approved and signed by the hub's addon CA
// (Secret open-cluster-management-hub/addon-signer-ca) and the certificate
// lands in signed-hub-kubeconfig, without a kubeconfig. CSRs of that signer
// naming another cluster, another addon or another subject are denied and
// never signed.
func TestCustomSignerRegistration(t *testing.T) {
	ctx := context.Background()
	cluster, ns := "cluster1", ocm.DefaultAddonInstallNamespace
	_, err := ops.Enable(ctx, hubCli, ops.EnableOptions{Names: []string{"signed"}, Clusters: []string{cluster}})
	require.NoError(t, err)
	t.Cleanup(func() { disable(t, cluster, "signed") })

	m := eventuallyRegistration(t, cluster, "signed")
	assert.Equal(t, customSigner, m.SignerName)
	assert.Equal(t, "signed-client", m.Subject.User)

	hub := kubernetes.NewForConfigOrDie(env.Hub.Config)
	var data map[string][]byte
	require.Eventually(t, func() bool {
		sec, err := spoke(0).CoreV1().Secrets(ns).Get(ctx, ocm.AddonHubKubeconfigSecret("signed"), metav1.GetOptions{})
		if err != nil {
			return false
		}
		data = sec.Data
		return true
	}, timeout, tick, "the klusterlet writes the custom-signed certificate")
	assert.NotContains(t, data, "kubeconfig", "a custom signer's certificate is no hub identity")
	assert.Equal(t, cluster, string(data["cluster-name"]))
	cert := parsePEMCert(t, data["tls.crt"])
	assert.Equal(t, "signed-client", cert.Subject.CommonName)
	assert.Equal(t, []string{"signed-clients"}, cert.Subject.Organization)

	caSec, err := hub.CoreV1().Secrets(approve.SignerCANamespace).Get(ctx, approve.SignerCASecret, metav1.GetOptions{})
	require.NoError(t, err, "the hub keeps its addon CA in a Secret")
	roots := x509.NewCertPool()
	roots.AddCert(parsePEMCert(t, caSec.Data["tls.crt"]))
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.NoError(t, err, "signed by the hub's addon CA")

	// The approved CSR is the cluster's, for this addon.
	csrs, err := hub.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: ocm.AddonNameLabel + "=signed"})
	require.NoError(t, err)
	signed := 0
	for _, c := range csrs.Items {
		if c.Spec.SignerName == customSigner && len(c.Status.Certificate) > 0 {
			signed++
			assert.Equal(t, cluster, c.Labels[ocm.ClusterNameLabel])
		}
	}
	assert.Positive(t, signed)

	// Refusals, filed with cluster1's agent credential.
	custom := func(labelCluster, labelAddon, cn string, orgs ...string) *certificatesv1.CertificateSigningRequest {
		c := addonCSR(t, labelCluster, labelAddon, cn, orgs...)
		c.Spec.SignerName = customSigner
		return c
	}
	msg := eventuallyDenied(t, clusterAgent(t, 0), custom("cluster2", "signed", "signed-client", "signed-clients"))
	assert.Contains(t, msg, "not an agent of cluster cluster2")
	msg = eventuallyDenied(t, clusterAgent(t, 0), custom(cluster, "example", "signed-client", "signed-clients"))
	assert.Contains(t, msg, "example")
	msg = eventuallyDenied(t, clusterAgent(t, 0), custom(cluster, "signed", "admin", "signed-clients"))
	assert.Contains(t, msg, "matches no registration")
	denied, err := hub.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, c := range denied.Items {
		for _, cond := range c.Status.Conditions {
			if cond.Type == certificatesv1.CertificateDenied {
				assert.Empty(t, c.Status.Certificate, "denied CSR %s was signed", c.Name)
			}
		}
	}
}

// eventuallyRegistration waits until the addon publishes its registration.
func eventuallyRegistration(t *testing.T, cluster, name string) addonv1alpha1.RegistrationConfig {
	t.Helper()
	var got addonv1alpha1.RegistrationConfig
	require.Eventually(t, func() bool {
		m, err := getAddon(cluster, name)
		if err != nil || len(m.Status.Registrations) == 0 {
			return false
		}
		got = m.Status.Registrations[0]
		return true
	}, timeout, tick)
	return got
}
