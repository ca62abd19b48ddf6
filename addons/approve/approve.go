// Package approve is the hub controller that decides addon agents' CSRs.
//
// Resource: certificates.k8s.io/v1 CertificateSigningRequest with the labels
// open-cluster-management.io/cluster-name and open-cluster-management.io/addon-name.
// It approves a CSR only when hub/registration/csr.EvaluateAddon does: the
// requester is that cluster's own agent and the subject is one the cluster's
// ManagedClusterAddOn of that addon declares in status.registrations. Any other
// addon CSR is denied with the failed check in the message. An approved CSR of
// a CustomSigner registration (a signer outside kubernetes.io) is then signed
// here with the hub's addon CA (signer.go). No finalizer, no
// conditions of its own (the CSR's Approved/Denied).
package approve

import (
	"context"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	hubcsr "flotilla.dev/flotilla/hub/registration/csr"
	"flotilla.dev/flotilla/internal/ocm"
)

// Reconciler approves or denies addon CSRs.
type Reconciler struct {
	client.Client
	// reader reads the signer CA Secret past the cache: the hub may get that
	// one Secret by name, and lists or watches none.
	reader client.Reader
}

// Setup registers the controller with mgr.
func Setup(mgr ctrl.Manager) error {
	isAddon := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[ocm.AddonNameLabel]
		return ok
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("addon-csr-approver").
		For(&certificatesv1.CertificateSigningRequest{}, builder.WithPredicates(isAddon)).
		Complete(&Reconciler{Client: mgr.GetClient(), reader: mgr.GetAPIReader()})
}

// Reconcile: get, read the addon's registrations, decide, write the decision.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var csr certificatesv1.CertificateSigningRequest
	if err := r.Get(ctx, req.NamespacedName, &csr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	toSign := approvedUnsigned(&csr) && hubcsr.IsCustomSigner(csr.Spec.SignerName)
	if hubcsr.Decided(&csr) && !toSign {
		return ctrl.Result{}, nil
	}
	var regs []addonv1alpha1.RegistrationConfig
	cluster, addon := csr.Labels[ocm.ClusterNameLabel], csr.Labels[ocm.AddonNameLabel]
	if cluster != "" && addon != "" {
		var mca addonv1alpha1.ManagedClusterAddOn
		err := r.Get(ctx, types.NamespacedName{Namespace: cluster, Name: addon}, &mca)
		switch {
		case err == nil && mca.DeletionTimestamp == nil:
			regs = mca.Status.Registrations
			if regs == nil {
				regs = []addonv1alpha1.RegistrationConfig{}
			}
		case err != nil && !apierrors.IsNotFound(err):
			return ctrl.Result{}, err
		}
	}
	if toSign {
		// Checked again: whoever approved it, only a CSR the addon checks pass is signed.
		v := hubcsr.RecheckAddon(&csr, regs)
		if v.Decision != hubcsr.Approve {
			log.FromContext(ctx).Info("approved addon CSR not signed", "csr", csr.Name, "check", v.Check, "reason", v.Message)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, r.sign(ctx, &csr)
	}
	v := hubcsr.EvaluateAddon(&csr, regs)
	logger := log.FromContext(ctx).WithValues("csr", csr.Name, "cluster", v.Cluster, "addon", v.Addon)
	switch v.Decision {
	case hubcsr.Approve:
		logger.Info("addon CSR approved")
		if err := hubcsr.SetApproved(ctx, r.Client, &csr, v.Message); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, nil // a custom signer's CSR is signed on the update this causes
	case hubcsr.Reject:
		if v.Check == hubcsr.CheckSigner {
			return ctrl.Result{}, nil // another signer's CSR: not ours to decide
		}
		logger.Info("addon CSR denied", "check", v.Check, "reason", v.Message)
		return ctrl.Result{}, hubcsr.SetDenied(ctx, r.Client, &csr, "check "+v.Check+" failed: "+v.Message)
	}
	return ctrl.Result{}, nil
}

func approvedUnsigned(csr *certificatesv1.CertificateSigningRequest) bool {
	if len(csr.Status.Certificate) > 0 {
		return false
	}
	approved := false
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return false
		}
	}
	return approved
}
