package approve

import (
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"flotilla.dev/flotilla/hub/registration/signer"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/pki"
)

// The CA that signs CustomSigner registrations' CSRs: the hub creates it on
// first use in this Secret (keys tls.crt, tls.key) and keeps it; an admin may
// put their own CA there instead.
const (
	SignerCANamespace = ocm.HubNamespace
	SignerCASecret    = "addon-signer-ca"
	signerCALife      = 10 * 365 * 24 * time.Hour
)

// signerCA reads the addon signer CA, creating it when absent.
func (r *Reconciler) signerCA(ctx context.Context) (*signer.CA, error) {
	key := types.NamespacedName{Namespace: SignerCANamespace, Name: SignerCASecret}
	var sec corev1.Secret
	err := r.reader.Get(ctx, key, &sec)
	if apierrors.IsNotFound(err) {
		ca, err := pki.NewCA("flotilla-addon-signer", signerCALife)
		if err != nil {
			return nil, err
		}
		sec = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: ca.CertPEM, corev1.TLSPrivateKeyKey: ca.KeyPEM}}
		if err := r.ensureNamespace(ctx, key.Namespace); err != nil {
			return nil, err
		}
		if err := r.Create(ctx, &sec); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create Secret %s: %w", key, err)
		}
		if err := r.reader.Get(ctx, key, &sec); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	ca, err := signer.Parse(sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("Secret %s: %w", key, err)
	}
	return ca, nil
}

func (r *Reconciler) ensureNamespace(ctx context.Context, name string) error {
	err := r.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// sign writes the certificate of an approved CustomSigner CSR.
func (r *Reconciler) sign(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
	ca, err := r.signerCA(ctx)
	if err != nil {
		return err
	}
	certPEM, err := ca.Sign(csr.Spec, time.Now())
	if err != nil {
		return fmt.Errorf("sign CSR %s: %w", csr.Name, err)
	}
	csr.Status.Certificate = certPEM
	return r.Status().Update(ctx, csr)
}
