package signer

import (
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

	"flotilla.dev/flotilla/internal/fileinput"
)

// DefaultDuration is the life of a signed certificate when the CSR asks for none.
const DefaultDuration = 365 * 24 * time.Hour

// CA signs client certificates.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// Load reads a PEM CA certificate and private key from files.
func Load(certFile, keyFile string) (*CA, error) {
	certPEM, err := fileinput.ReadFile(certFile, fileinput.CredentialLimit, "certificate files")
	if err != nil {
		return nil, fmt.Errorf("signer certificate: %w", err)
	}
	keyPEM, err := fileinput.ReadFile(keyFile, fileinput.CredentialLimit, "key files")
	if err != nil {
		return nil, fmt.Errorf("signer key: %w", err)
	}
	return Parse(certPEM, keyPEM)
}

// Parse builds a CA from PEM certificate and key.
func Parse(certPEM, keyPEM []byte) (*CA, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("signer certificate and key do not form a pair: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, errors.New("signer certificate is not a CA (basicConstraints CA:TRUE missing)")
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("signer key cannot sign")
	}
	return &CA{Cert: cert, Key: key}, nil
}

var usageMap = map[certificatesv1.KeyUsage]x509.KeyUsage{
	certificatesv1.UsageDigitalSignature: x509.KeyUsageDigitalSignature,
	certificatesv1.UsageKeyEncipherment:  x509.KeyUsageKeyEncipherment,
}

// Sign issues a client certificate for the CSR's request, valid from now for
// expirationSeconds (DefaultDuration when unset), never beyond the CA's own life.
// It returns the PEM certificate.
func (ca *CA) Sign(spec certificatesv1.CertificateSigningRequestSpec, now time.Time) ([]byte, error) {
	block, _ := pem.Decode(spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("request is not a PEM CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("request signature: %w", err)
	}
	life := DefaultDuration
	if spec.ExpirationSeconds != nil {
		life = time.Duration(*spec.ExpirationSeconds) * time.Second
	}
	notAfter := now.Add(life)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      req.Subject,
		NotBefore:    now.Add(-5 * time.Minute), // tolerate small clock skew
		NotAfter:     notAfter,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, u := range spec.Usages {
		tmpl.KeyUsage |= usageMap[u]
	}
	pubDER, err := x509.MarshalPKIXPublicKey(req.PublicKey)
	if err != nil {
		return nil, err
	}
	id := sha256.Sum256(pubDER)
	tmpl.SubjectKeyId = id[:20]
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, req.PublicKey, ca.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
