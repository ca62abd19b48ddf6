package pki

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIssueVerifiesAgainstCA(t *testing.T) {
	ca, err := NewCA("test-ca", time.Hour)
	require.NoError(t, err)

	serving, err := ca.Issue(CertRequest{CommonName: "apiserver", DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}})
	require.NoError(t, err)
	client, err := ca.Issue(CertRequest{CommonName: "admin", Organizations: []string{"system:masters"}, Client: true})
	require.NoError(t, err)

	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)

	sc := parse(t, serving.CertPEM)
	_, err = sc.Verify(x509.VerifyOptions{Roots: roots, DNSName: "localhost", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	assert.NoError(t, err)

	cc := parse(t, client.CertPEM)
	_, err = cc.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.NoError(t, err)
	assert.Equal(t, []string{"system:masters"}, cc.Subject.Organization)

	// A client certificate is not a serving certificate.
	_, err = cc.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	assert.Error(t, err)
}

func TestLoadCARoundTrip(t *testing.T) {
	dir := t.TempDir()
	ca, err := NewCA("round-trip", time.Hour)
	require.NoError(t, err)
	require.NoError(t, WriteFiles(dir, "ca", ca.CertPEM, ca.KeyPEM))

	loaded, err := LoadCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"))
	require.NoError(t, err)
	assert.True(t, loaded.Cert.Equal(ca.Cert))
	_, err = loaded.Issue(CertRequest{CommonName: "x", Client: true})
	assert.NoError(t, err)
}

func TestIssueNeedsCommonName(t *testing.T) {
	ca, err := NewCA("ca", time.Hour)
	require.NoError(t, err)
	_, err = ca.Issue(CertRequest{})
	assert.ErrorContains(t, err, "common name")
}

func parse(t *testing.T, p []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(p)
	require.NotNil(t, b)
	c, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	return c
}
