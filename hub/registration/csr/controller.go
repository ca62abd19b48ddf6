package csr

import (
	"context"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

	"flotilla.dev/flotilla/hub/registration/health"
	"flotilla.dev/flotilla/internal/ocm"
)

// Reconciler approves managed-cluster CSRs that pass every check.
type Reconciler struct {
	Client client.Client
	// Recorder records an event on each CSR left pending because a check failed.
	Recorder events.EventRecorder
	// AutoApproveUsers: requesters whose first CSRs are approved without an
	// admin, for a cluster nobody decided on (which the hub then accepts) or
	// one whose lease is stale (see autoApprove). Default none.
	AutoApproveUsers []string
	// Reader reads an auto-approve user's cluster, its ClusterRole and its
	// lease past the cache: a cache that stopped delivering must not make a
	// live cluster's lease look stale. Default: Client.
	Reader client.Reader
	// LeaseGraceMultiplier: an accepted cluster whose lease is older than this
	// many leaseDurationSeconds is stale (the health controller's measure,
	// health.Grace). Default health.DefaultGraceMultiplier (5).
	LeaseGraceMultiplier int
	// Now returns the current time. Default time.Now.
	Now func() time.Time

	// started is when SetupWithManager ran: the hub's controllers start
	// again after its apiserver restarted, so this is when it could first
	// see leases renewed (Facts.ListeningSince).
	started time.Time
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
	if r.Reader == nil {
		r.Reader = mgr.GetAPIReader()
	}
	r.started = r.now()
	hasLabel := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[ocm.ClusterNameLabel]
		return ok
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("csr-approver").
		WithOptions(controller.Options{MaxConcurrentReconciles: Workers}).
		For(&certificatesv1.CertificateSigningRequest{}, builder.WithPredicates(hasLabel))
	if len(r.AutoApproveUsers) > 0 {
		// An auto-approve user's first CSR waits for its cluster to exist
		// and for its RBAC (see Reconcile); only then is there anything to
		// wait for.
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

// waitingOn maps a ManagedCluster that may have just become what an
// auto-approve user's first CSR waits for (wakes) to those CSRs (awaitsGrant).
// Its agent writes its status as often as it likes, and anyone who may create
// CSRs can file thousands under its label: so the CSRs are found through an
// index, not by reading all of them, and only an auto-approve user's are
// brought back (any other waits for an admin, unchanged).
func (r *Reconciler) waitingOn(ctx context.Context, obj client.Object) []ctrl.Request {
	mc, ok := obj.(*clusterv1.ManagedCluster)
	if !ok || !wakes(mc) {
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

// wakes: mc is a cluster an auto-approve user's first CSR may be waiting for:
// one nobody decided on (it has just been created: a CSR filed before it
// waited for it), or one the hub has just granted (HubAccepted=True, not yet
// Joined: a CSR the hub accepted it for waited for that). A joined cluster's
// frequent status writes wake nothing.
func wakes(mc *clusterv1.ManagedCluster) bool {
	accepted := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted)
	if !mc.Spec.HubAcceptsClient {
		return accepted == nil
	}
	return accepted != nil && accepted.Status == metav1.ConditionTrue &&
		meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) == nil
}

// awaitsGrant: csr may be one an auto-approve user's first CSR left waiting for
// its cluster's RBAC: undecided, for the signer the hub decides, from an
// auto-approve user.
func awaitsGrant(csr *certificatesv1.CertificateSigningRequest, autoApproveUsers []string) bool {
	return !Decided(csr) && csr.Spec.SignerName == certificatesv1.KubeAPIServerClientSignerName &&
		slices.Contains(autoApproveUsers, csr.Spec.Username)
}

// Reconcile: get, gather facts, Evaluate, write the verdict (approve, deny,
// accept the cluster, or record why the CSR stays pending).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, csr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if Decided(csr) {
		return ctrl.Result{}, nil
	}
	facts, cluster, err := r.facts(ctx, csr)
	if err != nil {
		return ctrl.Result{}, err
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
	case Wait:
		logger.Info("CSR waits", "csr", csr.Name, "cluster", v.Cluster, "reason", v.Message)
		return ctrl.Result{RequeueAfter: v.RetryAfter}, nil
	case Hold:
		r.event(csr, corev1.EventTypeWarning, "AutoApproveHeld", v.Message)
		logger.Info("CSR of an auto-approve user held for an admin", "csr", csr.Name, "cluster", v.Cluster, "reason", v.Message)
		return ctrl.Result{RequeueAfter: v.RetryAfter}, nil
	case Accept:
		// The CSR is approved once the hub has granted the cluster its RBAC
		// and lease (HubAccepted=True; the ManagedCluster watch brings the CSR
		// back), as `accept` does: a certificate signed earlier is refused by
		// the hub at first, and its agent and work agent back off (5,000
		// clusters joining at once retried forbidden requests by the thousand
		// per second: test/bench/scale).
		if err := r.accept(ctx, cluster, csr); err != nil {
			return ctrl.Result{}, err
		}
		logger.Info("cluster accepted for an auto-approve user's first CSR", "csr", csr.Name, "cluster", v.Cluster)
	case Approve:
		if err := SetApproved(ctx, r.Client, csr, v.Message); err != nil {
			return ctrl.Result{}, err
		}
		logger.Info("CSR approved", "csr", csr.Name, "cluster", v.Cluster, "renewal", v.Renewal, "reason", v.Message)
	}
	return ctrl.Result{}, nil
}

// facts gathers what Evaluate needs: for a renewal, may the requester renew;
// for an auto-approve user's first CSR, its cluster (returned too, for
// accept).
func (r *Reconciler) facts(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (Facts, *clusterv1.ManagedCluster, error) {
	facts := Facts{AutoApproveUsers: r.AutoApproveUsers, Now: r.now(), ListeningSince: r.started}
	v := Validate(csr)
	switch {
	case v.Decision != "":
		return facts, nil, nil
	case v.Renewal:
		allowed, err := r.mayRenew(ctx, csr, v.Cluster)
		facts.RequesterMayRenew = allowed
		return facts, nil, err
	case slices.Contains(r.AutoApproveUsers, csr.Spec.Username):
		cf, cluster, err := r.clusterFacts(ctx, v.Cluster)
		facts.Cluster = cf
		return facts, cluster, err
	}
	return facts, nil, nil
}

// clusterFacts reads the cluster, its ClusterRole and its lease past the cache.
func (r *Reconciler) clusterFacts(ctx context.Context, name string) (ClusterFacts, *clusterv1.ManagedCluster, error) {
	reader := r.Reader
	if reader == nil {
		reader = r.Client
	}
	cluster := &clusterv1.ManagedCluster{}
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return ClusterFacts{}, nil, nil
		}
		return ClusterFacts{}, nil, err
	}
	f := ClusterFacts{
		Found: true, Deleting: !cluster.DeletionTimestamp.IsZero(), HubAcceptsClient: cluster.Spec.HubAcceptsClient,
		HubAccepted:     meta.FindStatusCondition(cluster.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted),
		AutoAcceptedFor: cluster.Annotations[AutoAcceptedAnnotation],
		Grace:           health.Grace(r.LeaseGraceMultiplier, cluster),
	}
	err := reader.Get(ctx, client.ObjectKey{Name: ocm.ClusterRoleName(name)}, &rbacv1.ClusterRole{})
	if client.IgnoreNotFound(err) != nil {
		return f, nil, err
	}
	f.EverGranted = err == nil
	lease := &coordinationv1.Lease{}
	err = reader.Get(ctx, client.ObjectKey{Namespace: name, Name: health.LeaseName}, lease)
	if client.IgnoreNotFound(err) != nil {
		return f, nil, err
	}
	f.LeaseRenewTime = lease.Spec.RenewTime
	return f, cluster, nil
}

// accept sets hubAcceptsClient=true and AutoAcceptedAnnotation=csr's UID on
// the cluster Evaluate judged, in one write that fails if the cluster changed
// since (an admin's deny in between is never overwritten).
func (r *Reconciler) accept(ctx context.Context, cluster *clusterv1.ManagedCluster, csr *certificatesv1.CertificateSigningRequest) error {
	before := cluster.DeepCopy()
	if cluster.Annotations == nil {
		cluster.Annotations = map[string]string{}
	}
	cluster.Annotations[AutoAcceptedAnnotation] = string(csr.UID)
	cluster.Spec.HubAcceptsClient = true
	return r.Client.Patch(ctx, cluster, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
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

func (r *Reconciler) event(csr *certificatesv1.CertificateSigningRequest, kind, reason, msg string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(csr, nil, kind, reason, "Approve", "%s", msg)
	}
}
