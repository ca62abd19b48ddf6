package certpolicy_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// t0 is the evaluation time of the tables.
var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

var (
	keyOnce sync.Once
	key     *ecdsa.PrivateKey
)

// certPEM is a self-signed certificate valid from notBefore to notAfter.
func certPEM(tb testing.TB, notBefore, notAfter time.Time, ca bool, sans ...string) []byte {
	tb.Helper()
	keyOnce.Do(func() {
		var err error
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
	})
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: notBefore, NotAfter: notAfter, DNSNames: sans,
		IsCA: ca, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// secretBuilder builds a Secret: secret("ns", "name").Cert(...).Obj().
type secretBuilder struct{ s *corev1.Secret }

func secret(ns, name string) *secretBuilder {
	return &secretBuilder{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type: corev1.SecretTypeTLS, Data: map[string][]byte{}}}
}

// Cert puts a certificate expiring left after t0, valid for total, in tls.crt.
func (b *secretBuilder) Cert(tb testing.TB, left, total time.Duration, ca bool, sans ...string) *secretBuilder {
	notAfter := t0.Add(left)
	b.s.Data[corev1.TLSCertKey] = certPEM(tb, notAfter.Add(-total), notAfter, ca, sans...)
	return b
}

func (b *secretBuilder) Data(key string, v []byte) *secretBuilder { b.s.Data[key] = v; return b }
func (b *secretBuilder) Opaque() *secretBuilder                   { b.s.Type = corev1.SecretTypeOpaque; return b }
func (b *secretBuilder) Label(k, v string) *secretBuilder {
	if b.s.Labels == nil {
		b.s.Labels = map[string]string{}
	}
	b.s.Labels[k] = v
	return b
}
func (b *secretBuilder) Obj() *corev1.Secret { return b.s }

// policy builds a CertificatePolicy including ns.
func policy(spec policyv1.CertificatePolicySpec, include ...string) *policyv1.CertificatePolicy {
	for _, ns := range include {
		spec.NamespaceSelector.Include = append(spec.NamespaceSelector.Include, policyv1.NonEmptyString(ns))
	}
	return &policyv1.CertificatePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "certs"}, Spec: spec}
}
