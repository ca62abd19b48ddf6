package governance_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/agent"
)

// tlsCert is a self-signed PEM certificate expiring left from now.
func tlsCert(t *testing.T, left time.Duration, sans ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	notAfter := time.Now().Add(left)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e"},
		NotBefore: notAfter.Add(-365 * 24 * time.Hour), NotAfter: notAfter, DNSNames: sans}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func putTLSSecret(t *testing.T, c client.Client, ns, name string, crt []byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: []byte("k")}}
	require.NoError(t, c.Create(context.Background(), s))
}

const certTemplate = `{"apiVersion":"policy.open-cluster-management.io/v1","kind":"CertificatePolicy",
 "metadata":{"name":"web-certs"},
 "spec":{"namespaceSelector":{"include":["certs-web"]},"remediationAction":"inform","severity":"low","minimumDuration":"720h"}}`

// TestCertificatePolicy: a Policy carrying a CertificatePolicy (as
// policy-collection's policy-certificatepolicy does) is delivered by the
// framework agent and checked by the config-policy-controller agent's
// certificate engine on each cluster: cluster1's certificate expires within
// the minimum and reports NonCompliant with upstream's message on the hub,
// cluster2's is Compliant until a malformed certificate appears there (a
// reason, not a crash). The replica gone, the template goes.
func TestCertificatePolicy(t *testing.T) {
	ctx := context.Background()
	const ns = "certs"
	policyNamespace(t, ns)
	for i := range env.Clusters {
		sc := spokeCli(t, i)
		require.NoError(t, sc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "certs-web"}}))
		left := 90 * 24 * time.Hour
		if i == 0 {
			left = 10 * 24 * time.Hour
		}
		putTLSSecret(t, sc, "certs-web", "tls-web", tlsCert(t, left, "web.example.com"))
	}
	binding := bindPolicy(t, ns, "policy-certificatepolicy", "", certTemplate)
	replica := ns + ".policy-certificatepolicy"

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		state, msg := replicaDetail("cluster1", ns, "policy-certificatepolicy", "web-certs")
		assert.Equal(c, policyv1.NonCompliant, state)
		assert.Equal(c, "NonCompliant; 1 certificates expire in less than 720h0m0s: certs-web:tls-web\n", msg)
	}, timeout, tick)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		state, msg := replicaDetail("cluster2", ns, "policy-certificatepolicy", "web-certs")
		assert.Equal(c, policyv1.Compliant, state)
		assert.Equal(c, "Compliant", msg)
	}, timeout, tick)

	// On the managed cluster: owned by the copy, the non-compliant
	// certificate listed with its reason and expiry.
	var cp policyv1.CertificatePolicy
	require.NoError(t, spokeCli(t, 0).Get(ctx, clientKey("cluster1", "web-certs"), &cp))
	assert.Equal(t, replica, cp.Labels[agent.PolicyLabel])
	require.Len(t, cp.OwnerReferences, 1)
	cert := cp.Status.CompliancyDetails["certs-web"].NonCompliantCertificatesList["tls-web"]
	assert.Equal(t, []string{"expires in less than 720h0m0s"}, cert.Reasons)
	assert.NotEmpty(t, cert.Expiration)

	// A malformed certificate on cluster2: NonCompliant with the reason.
	putTLSSecret(t, spokeCli(t, 1), "certs-web", "broken", []byte("garbage"))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		state, msg := replicaDetail("cluster2", ns, "policy-certificatepolicy", "web-certs")
		assert.Equal(c, policyv1.NonCompliant, state)
		assert.Equal(c, "NonCompliant;  1 certificates cannot be read: certs-web:broken\n", msg)
	}, timeout, tick)

	// The replica goes: so does the template.
	require.NoError(t, hubCli.Delete(ctx, binding))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(spokeCli(t, 0).Get(ctx, clientKey("cluster1", "web-certs"), &policyv1.CertificatePolicy{}))
	}, timeout, tick, "CertificatePolicy not removed with its replica")
}

// TestCertificatePolicyInvalidDuration: a duration the CRD refuses on the
// managed cluster is a template-error naming the field, on the hub; nothing
// is created, and the policy's other template is still evaluated.
func TestCertificatePolicyInvalidDuration(t *testing.T) {
	ctx := context.Background()
	const ns = "certs-bad"
	policyNamespace(t, ns)
	bad := strings.Replace(strings.Replace(certTemplate, `"720h"`, `"30d"`, 1), "web-certs", "bad-duration", 1)
	fine := strings.NewReplacer("web-certs", "fine", "certs-web", "certs-none").Replace(certTemplate)
	bindPolicy(t, ns, "bad", "", bad, fine)
	var rep policyv1.Policy
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, hubCli.Get(ctx, client.ObjectKey{Namespace: "cluster2", Name: ns + ".bad"}, &rep))
		require.Len(c, rep.Status.Details, 2)
		require.NotEmpty(c, rep.Status.Details[0].History)
		msg := rep.Status.Details[0].History[0].Message
		assert.True(c, strings.HasPrefix(msg, "NonCompliant; template-error; "), msg)
		assert.Contains(c, msg, "spec.minimumDuration")
		assert.Contains(c, msg, `"30d"`)
		assert.Equal(c, policyv1.Compliant, rep.Status.Details[1].ComplianceState)
	}, timeout, tick)
	assert.Equal(t, policyv1.NonCompliant, rep.Status.ComplianceState)
	assert.True(t, apierrors.IsNotFound(spokeCli(t, 1).Get(ctx, clientKey("cluster2", "bad-duration"), &policyv1.CertificatePolicy{})))
}
