package signer

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
)

func newCA(t *testing.T, isCA bool, life time.Duration) (certPEM, keyPEM []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(life), IsCA: isCA, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func request(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{
		CommonName: "system:open-cluster-management:c1:a1", Organization: []string{"system:open-cluster-management:c1"}}}, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestSign(t *testing.T) {
	certPEM, keyPEM := newCA(t, true, 24*time.Hour)
	ca, err := Parse(certPEM, keyPEM)
	require.NoError(t, err)
	now := time.Now()
	secs := func(s int32) *int32 { return &s }
	tests := []struct {
		name    string
		spec    certificatesv1.CertificateSigningRequestSpec
		life    time.Duration
		wantErr string
	}{
		{"asked duration", certificatesv1.CertificateSigningRequestSpec{Request: request(t), ExpirationSeconds: secs(600)}, 10 * time.Minute, ""},
		{"capped at the CA's end", certificatesv1.CertificateSigningRequestSpec{Request: request(t)}, 24 * time.Hour, ""},
		{"garbage", certificatesv1.CertificateSigningRequestSpec{Request: []byte("x")}, 0, "not a PEM CERTIFICATE REQUEST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := ca.Sign(tt.spec, now)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			block, _ := pem.Decode(out)
			cert, err := x509.ParseCertificate(block.Bytes)
			require.NoError(t, err)
			assert.Equal(t, "system:open-cluster-management:c1:a1", cert.Subject.CommonName)
			assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, cert.ExtKeyUsage)
			assert.WithinDuration(t, now.Add(tt.life), cert.NotAfter, 2*time.Second)
			_, err = cert.Verify(x509.VerifyOptions{Roots: pool(ca.Cert), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
			assert.NoError(t, err)
		})
	}
}

func TestParseRejectsNonCA(t *testing.T) {
	certPEM, keyPEM := newCA(t, false, time.Hour)
	_, err := Parse(certPEM, keyPEM)
	assert.ErrorContains(t, err, "not a CA")
	otherCert, _ := newCA(t, true, time.Hour)
	_, err = Parse(otherCert, keyPEM)
	assert.ErrorContains(t, err, "do not form a pair")
}

func pool(c *x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c)
	return p
}

// TestSignerRechecksApprovedCSRs: the built-in signer refuses an approved CSR that
// fails the hub's checks (someone approved it by hand or by mistake).
func TestSignerRechecksApprovedCSRs(t *testing.T) {
	csr := func(label string) *certificatesv1.CertificateSigningRequest {
		c := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: request(t), SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		}}
		c.Labels = map[string]string{"open-cluster-management.io/cluster-name": label}
		return c
	}
	assert.NoError(t, errNotValid(csr("c1")))
	err := errNotValid(csr("c2"))
	require.Error(t, err, "a CSR for c1's agent under c2's label")
	assert.Contains(t, err.Error(), "check subject-organization failed")
	bad := csr("c1")
	bad.Spec.Usages = append(bad.Spec.Usages, certificatesv1.UsageServerAuth)
	assert.ErrorContains(t, errNotValid(bad), "key-usages")
}
