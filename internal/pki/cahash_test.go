package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func selfSignedCA(t *testing.T) ([]byte, *x509.Certificate) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), cert
}

func TestCAHashes(t *testing.T) {
	a, certA := selfSignedCA(t)
	b, _ := selfSignedCA(t)
	sum := sha256.Sum256(certA.RawSubjectPublicKeyInfo)
	want := "sha256:" + hex.EncodeToString(sum[:])
	assert.Equal(t, []string{want}, CAHashes(a))
	got := CAHashes(append(append([]byte{}, a...), b...))
	assert.Len(t, got, 2, "one hash per certificate of a bundle")
	assert.Equal(t, want, got[0])
	assert.Empty(t, CAHashes([]byte("not pem")))

	parsed, err := ParseCAHash(strings.ToUpper(want[len("sha256:"):]) + "")
	assert.Error(t, err, "the sha256: prefix is required")
	assert.Empty(t, parsed)
	parsed, err = ParseCAHash("SHA256:" + strings.ToUpper(want[len("sha256:"):]))
	require.NoError(t, err)
	assert.Equal(t, want, parsed)
	for _, bad := range []string{"", "sha256:", "sha256:abc", "md5:" + want[7:], want + "00"} {
		_, err := ParseCAHash(bad)
		assert.Error(t, err, bad)
	}
}
