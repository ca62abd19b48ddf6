package csr

import (
	"context"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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

// clusterIndex indexes CSRs by their cluster-name label in the hub's cache.
const clusterIndex = "csr.clusterName"

// SetupWithManager registers the reconciler for CSRs with the cluster-name label.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	hasLabel := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[ocm.ClusterNameLabel]
		return ok
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("csr-approver").
		WithOptions(controller.Options{MaxConcurrentReconciles: Workers}).
		For(&certificatesv1.CertificateSigningRequest{}, builder.WithPredicates(hasLabel))
	if len(r.AutoApproveUsers) > 0 {
		// An auto-approved first CSR waits for its cluster's RBAC (see
		// Reconcile); only then is there anything to wait for.
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), &certificatesv1.CertificateSigningRequest{}, clusterIndex,
			func(o client.Object) []string {
				if name, ok := o.GetLabels()[ocm.ClusterNameLabel]; ok {
					return []string{name}
				}
				return nil
			}); err != nil {
			return err
		}
		b = b.Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.waitingOn))
	}
	return b.Complete(r)
}

// waitingOn maps a ManagedCluster the hub has just granted (HubAccepted=True,
// not yet Joined) to the CSRs waiting for that (awaitsGrant). Its agent writes
// its status as often as it likes, and anyone who may create CSRs can file
// thousands under its label: so the CSRs are found through an index, not by
// reading all of them, and only an auto-approve user's are brought back,
// which the first pass decides (any other waits for an admin, unchanged).
func (r *Reconciler) waitingOn(ctx context.Context, obj client.Object) []ctrl.Request {
	mc, ok := obj.(*clusterv1.ManagedCluster)
	if !ok || !meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted) ||
		meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) != nil {
		return nil
	}
	var list certificatesv1.CertificateSigningRequestList
	if err := r.Client.List(ctx, &list, client.MatchingFields{clusterIndex: mc.Name}, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "list the CSRs of a newly accepted cluster", "cluster", mc.Name)
		return nil
	}
	var reqs []ctrl.Request
	for i := range list.Items {
		if awaitsGrant(&list.Items[i], r.AutoApproveUsers) {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKey{Name: list.Items[i].Name}})
		}
	}
	return reqs
}

// awaitsGrant: csr may be one an auto-approve user's first CSR left waiting for
// its cluster's RBAC: undecided, for the signer the hub decides, from an
// auto-approve user.
func awaitsGrant(csr *certificatesv1.CertificateSigningRequest, autoApproveUsers []string) bool {
	return !Decided(csr) && csr.Spec.SignerName == certificatesv1.KubeAPIServerClientSignerName &&
		slices.Contains(autoApproveUsers, csr.Spec.Username)
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

// acceptCluster sets hubAcceptsClient for an auto-approve user's cluster when
// nobody has decided on it yet (autoAccept). granted: the hub has already made
// the cluster's RBAC (HubAccepted=True), so the CSR may be approved now.
func (r *Reconciler) acceptCluster(ctx context.Context, name string) (accepted, granted bool, err error) {
	cluster := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil {
		return false, false, err
	}
	everGranted := false
	if !cluster.Spec.HubAcceptsClient {
		err := r.Client.Get(ctx, client.ObjectKey{Name: ocm.ClusterRoleName(name)}, &rbacv1.ClusterRole{})
		if client.IgnoreNotFound(err) != nil {
			return false, false, err
		}
		everGranted = err == nil
	}
	accepted, granted = autoAccept(cluster, everGranted)
	if accepted && !cluster.Spec.HubAcceptsClient {
		cluster.Spec.HubAcceptsClient = true
		return true, false, r.Client.Update(ctx, cluster)
	}
	return accepted, granted, nil
}

// autoAccept decides what an auto-approve user's first CSR may do with its
// cluster: accepted, the cluster is accepted or may be (nobody decided on it);
// granted, the hub has made its RBAC (HubAccepted=True). everGranted: the
// cluster's ClusterRole exists (the hub accepted it once; a deny keeps it,
// read-only). Auto-approve never overrides a deny, including one the hub has
// not applied yet (spec false, HubAccepted still True) and one whose condition
// the agent dropped from its status.
func autoAccept(cluster *clusterv1.ManagedCluster, everGranted bool) (accepted, granted bool) {
	hubAccepted := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted)
	if cluster.Spec.HubAcceptsClient {
		return true, hubAccepted != nil && hubAccepted.Status == metav1.ConditionTrue
	}
	return hubAccepted == nil && !everGranted, false
}

func (r *Reconciler) event(csr *certificatesv1.CertificateSigningRequest, kind, reason, msg string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(csr, nil, kind, reason, "Approve", "%s", msg)
	}
}
