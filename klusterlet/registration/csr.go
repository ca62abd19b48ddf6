package registration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"flotilla.dev/flotilla/internal/ocm"
)

// newKey generates an agent private key and returns it as PEM.
func newKey() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func parseKey(keyPEM []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("no PEM private key")
	}
	return x509.ParseECPrivateKey(block.Bytes)
}

// Subject is the OCM certificate subject of one agent of a cluster.
func Subject(cluster, agent string) pkix.Name {
	return pkix.Name{
		CommonName:   ocm.AgentUserName(cluster, agent),
		Organization: []string{ocm.ClusterGroupName(cluster), ocm.ManagedClustersGroup},
	}
}

// BuildCSR returns the CertificateSigningRequest an agent submits: generateName
// <cluster>-, the cluster-name label, signer kube-apiserver-client, the OCM subject.
// expirationSeconds 0 leaves the duration to the signer.
func BuildCSR(cluster, agent string, keyPEM []byte, expirationSeconds int32) (*certificatesv1.CertificateSigningRequest, error) {
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: Subject(cluster, agent)}, key)
	if err != nil {
		return nil, err
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: cluster + "-", Labels: map[string]string{ocm.ClusterNameLabel: cluster}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth},
		},
	}
	if expirationSeconds > 0 {
		csr.Spec.ExpirationSeconds = &expirationSeconds
	}
	return csr, nil
}

// requestMatchesKey reports whether csr's request was made with keyPEM for the
// given subject, so a pending CSR can be reused after a restart.
func requestMatchesKey(csr *certificatesv1.CertificateSigningRequest, keyPEM []byte, subject pkix.Name) bool {
	key, err := parseKey(keyPEM)
	if err != nil {
		return false
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		return false
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return false
	}
	return samePublicKey(req.PublicKey, &key.PublicKey) && req.Subject.CommonName == subject.CommonName
}

// ownCSR reports whether csr asks for subject's certificate and (when requester
// is known) was made by requester: one of this agent's own CSRs.
func ownCSR(csr *certificatesv1.CertificateSigningRequest, subject pkix.Name, requester string) bool {
	if requester != "" && csr.Spec.Username != requester {
		return false
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		return false
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	return err == nil && req.Subject.CommonName == subject.CommonName
}

func samePublicKey(a any, b *ecdsa.PublicKey) bool {
	ka, ok := a.(*ecdsa.PublicKey)
	return ok && ka.Equal(b)
}

// parseCert returns the first certificate in PEM data.
func parseCert(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// checkIssued verifies that an issued certificate belongs to keyPEM and carries
// the agent's subject.
func checkIssued(certPEM, keyPEM []byte, subject pkix.Name) (*x509.Certificate, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, err
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	if !samePublicKey(cert.PublicKey, &key.PublicKey) {
		return nil, errors.New("issued certificate does not match the agent's private key")
	}
	if cert.Subject.CommonName != subject.CommonName {
		return nil, fmt.Errorf("issued certificate is for %q, want %q", cert.Subject.CommonName, subject.CommonName)
	}
	return cert, nil
}

// RotationDue returns when a certificate should be replaced: once only
// remainingFraction of its life (NotBefore..NotAfter) is left.
func RotationDue(cert *x509.Certificate, remainingFraction float64) time.Time {
	life := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotAfter.Add(-time.Duration(float64(life) * remainingFraction))
}

// validFor reports whether certPEM is a currently valid certificate for subject.
func validFor(certPEM []byte, subject pkix.Name, now time.Time) bool {
	cert, err := parseCert(certPEM)
	if err != nil {
		return false
	}
	return cert.Subject.CommonName == subject.CommonName && now.After(cert.NotBefore) && now.Before(cert.NotAfter)
}
