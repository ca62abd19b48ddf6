package csr

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"flotilla.dev/flotilla/internal/ocm"
)

// Reconciler approves managed-cluster CSRs that pass every check.
type Reconciler struct {
	Client client.Client
	// Recorder records an event on each CSR left pending because a check failed.
	Recorder events.EventRecorder
	// AutoApproveUsers: requesters whose first CSRs are approved without an admin
	// (and whose clusters are then accepted). Default none.
	AutoApproveUsers []string
}

// Workers is how many CSRs are decided at once. An approval is one write;
// one at a time, on a busy hub apiserver (half a second a write), 5,000
// clusters joining at once were approved at two a second (test/bench/scale).
// Each CSR is decided on its own, and never by two workers at once.
const Workers = 10

// SetupWithManager registers the reconciler for CSRs with the cluster-name label.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	hasLabel := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[ocm.ClusterNameLabel]
		return ok
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("csr-approver").
		WithOptions(controller.Options{MaxConcurrentReconciles: Workers}).
		For(&certificatesv1.CertificateSigningRequest{}, builder.WithPredicates(hasLabel)).
		// An auto-approved first CSR waits for its cluster's RBAC (see Reconcile).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.waitingOn)).
		Complete(r)
}

// waitingOn maps a ManagedCluster the hub has just granted (HubAccepted=True,
// not yet Joined) to its undecided CSRs.
func (r *Reconciler) waitingOn(ctx context.Context, obj client.Object) []ctrl.Request {
	mc, ok := obj.(*clusterv1.ManagedCluster)
	if !ok || !meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted) ||
		meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) != nil {
		return nil
	}
	var list certificatesv1.CertificateSigningRequestList
	if err := r.Client.List(ctx, &list, client.MatchingLabels{ocm.ClusterNameLabel: mc.Name}); err != nil {
		log.FromContext(ctx).Error(err, "list the CSRs of a newly accepted cluster", "cluster", mc.Name)
		return nil
	}
	var reqs []ctrl.Request
	for i := range list.Items {
		if !Decided(&list.Items[i]) {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKey{Name: list.Items[i].Name}})
		}
	}
	return reqs
}

// Reconcile: get, evaluate, approve (or record why not).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, csr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if Decided(csr) {
		return ctrl.Result{}, nil
	}
	facts := Facts{AutoApproveUsers: r.AutoApproveUsers}
	if v := Validate(csr); v.Decision == "" && v.Renewal {
		allowed, err := r.mayRenew(ctx, csr, v.Cluster)
		if err != nil {
			return ctrl.Result{}, err
		}
		facts.RequesterMayRenew = allowed
	}
	v := Evaluate(csr, facts)
	switch v.Decision {
	case Reject:
		r.event(csr, corev1.EventTypeWarning, "CSRCheckFailed", "check "+v.Check+" failed: "+v.Message)
		if v.Check == CheckSigner {
			// Another signer's CSR: the hub may not decide it; leave it be.
			logger.Info("CSR left unapproved", "csr", csr.Name, "check", v.Check, "reason", v.Message)
			return ctrl.Result{}, nil
		}
		// Denied, not left pending: the requester learns why at once, and a
		// pile of bad CSRs under a cluster's label cannot block that cluster.
		if err := SetDenied(ctx, r.Client, csr, "check "+v.Check+" failed: "+v.Message); err != nil {
			return ctrl.Result{}, err
		}
		logger.Info("CSR denied", "csr", csr.Name, "check", v.Check, "reason", v.Message)
		return ctrl.Result{}, nil
	case Wait:
		logger.Info("CSR waits for an admin", "csr", csr.Name, "cluster", v.Cluster)
		return ctrl.Result{}, nil
	case Approve:
		if !v.Renewal {
			// An auto-approve user joins its cluster without a separate accept,
			// unless the admin turned that cluster away.
			accepted, granted, err := r.acceptCluster(ctx, v.Cluster)
			if err != nil {
				return ctrl.Result{}, err
			}
			if !accepted {
				logger.Info("CSR of an auto-approve user waits: the hub admin denied its cluster", "csr", csr.Name, "cluster", v.Cluster)
				return ctrl.Result{}, nil
			}
			if !granted {
				// Approved once the hub has granted the cluster its RBAC and
				// lease (HubAccepted=True; the ManagedCluster watch brings the
				// CSR back), as `accept` does: a certificate signed earlier is
				// refused by the hub at first, and its agent and work agent
				// back off (5,000 clusters joining at once retried forbidden
				// requests by the thousand per second: test/bench/scale).
				return ctrl.Result{}, nil
			}
		}
		if err := SetApproved(ctx, r.Client, csr, v.Message); err != nil {
			return ctrl.Result{}, err
		}
		logger.Info("CSR approved", "csr", csr.Name, "cluster", v.Cluster, "renewal", v.Renewal)
	}
	return ctrl.Result{}, nil
}

// SetApproved sets the Approved condition on csr through the approval subresource.
func SetApproved(ctx context.Context, c client.Client, csr *certificatesv1.CertificateSigningRequest, message string) error {
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
		Reason: ApprovedReason, Message: message, LastUpdateTime: metav1.Now(),
	})
	return c.SubResource("approval").Update(ctx, csr)
}

// SetDenied sets the Denied condition on csr through the approval subresource.
func SetDenied(ctx context.Context, c client.Client, csr *certificatesv1.CertificateSigningRequest, message string) error {
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue,
		Reason: DeniedReason, Message: message, LastUpdateTime: metav1.Now(),
	})
	return c.SubResource("approval").Update(ctx, csr)
}

// mayRenew asks the apiserver whether the CSR's requester may renew the cluster's
// client certificate (only accepted clusters' agents may).
func (r *Reconciler) mayRenew(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, cluster string) (bool, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: ocm.RegisterGroup, Resource: "managedclusters", Subresource: "clientcertificates",
			Verb: "renew", Name: cluster,
		},
	}}
	if err := r.Client.Create(ctx, sar); err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}

// acceptCluster sets hubAcceptsClient for an auto-approve user's cluster. It
// reports accepted false, changing nothing, for a cluster the admin denied (its
// HubAcceptedManagedCluster condition is False): auto-approve never overrides a
// deny. granted: the hub has already made the cluster's RBAC (HubAccepted=True).
func (r *Reconciler) acceptCluster(ctx context.Context, name string) (accepted, granted bool, err error) {
	cluster := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil {
		return false, false, err
	}
	hubAccepted := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted)
	if cluster.Spec.HubAcceptsClient {
		return true, hubAccepted != nil && hubAccepted.Status == metav1.ConditionTrue, nil
	}
	if hubAccepted != nil && hubAccepted.Status == metav1.ConditionFalse {
		return false, false, nil
	}
	cluster.Spec.HubAcceptsClient = true
	return true, false, r.Client.Update(ctx, cluster)
}

func (r *Reconciler) event(csr *certificatesv1.CertificateSigningRequest, kind, reason, msg string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(csr, nil, kind, reason, "Approve", "%s", msg)
	}
}
