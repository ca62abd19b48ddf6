package signer

import (
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	hubcsr "flotilla.dev/flotilla/hub/registration/csr"
	"flotilla.dev/flotilla/internal/conditions"
	"flotilla.dev/flotilla/internal/ocm"
)

// Reconciler signs approved managed-cluster CSRs with CA.
type Reconciler struct {
	Client client.Client
	CA     *CA
}

// SetupWithManager registers the signer.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	mine := predicate.NewPredicateFuncs(func(o client.Object) bool {
		csr, ok := o.(*certificatesv1.CertificateSigningRequest)
		_, labelled := o.GetLabels()[ocm.ClusterNameLabel]
		return ok && labelled && csr.Spec.SignerName == certificatesv1.KubeAPIServerClientSignerName
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("csr-signer").
		For(&certificatesv1.CertificateSigningRequest{}, builder.WithPredicates(mine)).
		Complete(r)
}

// Reconcile: get, sign when approved and unsigned, write status.certificate.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, csr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if len(csr.Status.Certificate) > 0 || !approved(csr) {
		return ctrl.Result{}, nil
	}
	// Approval is someone's decision; what gets signed is checked here again.
	var cert []byte
	err := errNotValid(csr)
	if err == nil {
		cert, err = r.CA.Sign(csr.Spec, time.Now())
	}
	if err != nil {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: "SigningFailed",
			Message: "built-in signer: " + err.Error(), LastUpdateTime: metav1.Now(),
		})
	} else {
		csr.Status.Certificate = cert
	}
	conditions.Fit(ctx, nil, csr)
	return ctrl.Result{}, r.Client.Status().Update(ctx, csr)
}

func approved(csr *certificatesv1.CertificateSigningRequest) bool {
	ok := false
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return false
		case certificatesv1.CertificateApproved:
			ok = true
		}
	}
	return ok
}

// errNotValid runs the hub's CSR checks (signer, label, subject, usages).
func errNotValid(csr *certificatesv1.CertificateSigningRequest) error {
	if _, addon := csr.Labels[ocm.AddonNameLabel]; addon {
		if v := hubcsr.ValidateAddon(csr); v.Decision != "" {
			return fmt.Errorf("check %s failed: %s", v.Check, v.Message)
		}
		return nil
	}
	if v := hubcsr.Validate(csr); v.Decision != "" {
		return fmt.Errorf("check %s failed: %s", v.Check, v.Message)
	}
	return nil
}
