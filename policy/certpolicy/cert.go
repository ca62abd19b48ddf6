package certpolicy

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

const (
	// KeyLabel on a Secret names the data key holding its certificate
	// (upstream's "certificate_key_name"); default DefaultKey.
	KeyLabel = "certificate_key_name"
	// DefaultKey holds a Secret's certificate.
	DefaultKey = corev1.TLSCertKey
	// NameLabel and CertManagerNameLabel name a certificate in the status;
	// without them the Secret's name does.
	NameLabel            = "certificate-name"
	CertManagerNameLabel = "certmanager.k8s.io/certificate-name"
)

// Holds reports whether s holds a certificate to check: a kubernetes.io/tls
// Secret, or any Secret with data under its certificate key (DefaultKey, or
// the key KeyLabel names).
func Holds(s *corev1.Secret) bool {
	if s.Type == corev1.SecretTypeTLS {
		return true
	}
	_, ok := s.Data[certKey(s)]
	return ok
}

func certKey(s *corev1.Secret) string {
	if k := s.Labels[KeyLabel]; k != "" {
		return k
	}
	return DefaultKey
}

// CertName is the name a certificate is listed under: the Secret's
// NameLabel, else its CertManagerNameLabel, else the Secret's name.
func CertName(s *corev1.Secret) string {
	for _, l := range []string{NameLabel, CertManagerNameLabel} {
		if v := s.Labels[l]; v != "" {
			return v
		}
	}
	return s.Name
}

// errNoData: the Secret has no bytes under its certificate key.
var errNoData = errors.New("no certificate data")

// Parse returns the first certificate of s (the leaf: a chain starts with
// it), PEM or DER. The error says what is wrong with which key.
func Parse(s *corev1.Secret) (*x509.Certificate, error) {
	key := certKey(s)
	data := s.Data[key]
	if len(data) == 0 {
		return nil, errNoData
	}
	rest := data
	sawPEM := false
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		sawPEM = true
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: the first PEM CERTIFICATE block does not parse: %v", key, err)
		}
		return c, nil
	}
	if sawPEM {
		return nil, fmt.Errorf("%s: no PEM block of type CERTIFICATE", key)
	}
	c, err := x509.ParseCertificate(data)
	if err != nil {
		return nil, fmt.Errorf("%s: neither PEM nor a DER certificate (%v)", key, err)
	}
	return c, nil
}
