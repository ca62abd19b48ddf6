package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"flotilla.dev/flotilla/hub/registration/health"
	"flotilla.dev/flotilla/hub/registration/rbac"
	"flotilla.dev/flotilla/internal/conditions"
	"flotilla.dev/flotilla/internal/ocm"
)

// Condition reasons written by this controller (OCM's names).
const (
	ReasonAccepted = "HubClusterAdminAccepted"
	ReasonDenied   = "HubClusterAdminDenied"
)

// Workers is how many clusters are accepted at once. Each acceptance is a
// handful of writes in sequence (namespace, ClusterRole, ClusterRoleBinding,
// two RoleBindings, lease, status); one at a time, 50 clusters accepted at
// once waited for each other: p50 2.1-4.4 s, p99 3.5-6.6 s to Joined
// (test/bench/registration). Clusters share no object here, and a cluster is
// never reconciled by two workers at once.
const Workers = 10

// conflictRetry is the pause before re-reading an object another writer changed.
const conflictRetry = 20 * time.Millisecond

// Reconciler reconciles ManagedClusters. Client must be able to manage
// namespaces, RBAC, ManifestWorks and ManagedClusterAddOns.
type Reconciler struct {
	Client client.Client
	// Reader reads past Client's cache: the namespace of a cluster when the
	// cache does not have it (the hub caches only the namespaces it labelled,
	// rbac.Labelled). Default: Client.
	Reader client.Reader
	// Recorder reports status messages that were cut to fit. Optional.
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler and the shared ClusterRoles the
// per-cluster RoleBindings refer to.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("managedcluster-acceptance").
		WithOptions(controller.Options{MaxConcurrentReconciles: Workers}).
		For(&clusterv1.ManagedCluster{}).
		// A namespace or RBAC object removed or edited by hand is put back (this
		// also starts these informers at start-up instead of at the first accept).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(byClusterLabel)).
		Watches(&rbacv1.ClusterRole{}, handler.EnqueueRequestsFromMapFunc(byClusterLabel)).
		Watches(&rbacv1.RoleBinding{}, handler.EnqueueRequestsFromMapFunc(byClusterLabel)).
		Watches(&rbacv1.ClusterRoleBinding{}, handler.EnqueueRequestsFromMapFunc(byClusterLabel)).
		Complete(r)
}

func byClusterLabel(_ context.Context, obj client.Object) []ctrl.Request {
	if name := obj.GetLabels()[ocm.ClusterNameLabel]; name != "" {
		return []ctrl.Request{{NamespacedName: client.ObjectKey{Name: name}}}
	}
	return nil
}

// EnsureSharedRoles creates or updates the ClusterRoles shared by every cluster's
// RoleBindings. The hub calls it once at start.
func EnsureSharedRoles(ctx context.Context, c client.Client) error {
	for _, role := range []*rbacv1.ClusterRole{rbac.RegistrationRole(), rbac.WorkRole()} {
		if err := applyClusterRole(ctx, c, role); err != nil {
			return err
		}
	}
	return nil
}

// Reconcile: get, deletion, finalizer, accept or deny, status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	if apierrors.IsConflict(err) {
		// Another controller (or the agent) wrote first: read again, quietly.
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cluster.DeletionTimestamp.IsZero() {
		return r.cleanup(ctx, cluster)
	}
	if !controllerutil.ContainsFinalizer(cluster, clusterv1.ManagedClusterFinalizer) {
		controllerutil.AddFinalizer(cluster, clusterv1.ManagedClusterFinalizer)
		if err := r.Client.Update(ctx, cluster); err != nil {
			return ctrl.Result{}, err
		}
	}
	before := cluster.Status.DeepCopy()
	var err error
	var res ctrl.Result
	if cluster.Spec.HubAcceptsClient {
		err = r.accept(ctx, cluster.Name)
		var conflict *namespaceConflict
		switch {
		case errors.As(err, &conflict):
			// Nothing is granted; say why, and look again now and then.
			meta.SetStatusCondition(&cluster.Status.Conditions, metav1.Condition{
				Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionFalse, Reason: ReasonNamespaceConflict,
				Message: "Not accepted: " + conflict.Error(),
			})
			err, res = nil, ctrl.Result{RequeueAfter: conflictRequeue}
		case err == nil:
			meta.SetStatusCondition(&cluster.Status.Conditions, metav1.Condition{
				Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionTrue, Reason: ReasonAccepted,
				Message: "Accepted by the hub cluster admin",
			})
		}
	} else {
		// Driven by spec alone, every time: the agent may write its status, so a
		// missing HubAccepted condition proves nothing about what was granted.
		var had bool
		had, err = r.deny(ctx, cluster.Name)
		had = had || meta.FindStatusCondition(cluster.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted) != nil
		if err == nil && had {
			meta.SetStatusCondition(&cluster.Status.Conditions, metav1.Condition{
				Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionFalse, Reason: ReasonDenied,
				Message: "Denied by the hub cluster admin: spec.hubAcceptsClient is false; the agent may only read its ManagedCluster",
			})
		}
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("managed cluster %s: %w", cluster.Name, err)
	}
	conditions.Fit(ctx, r.Recorder, cluster)
	if !equality.Semantic.DeepEqual(before, &cluster.Status) {
		return res, r.Client.Status().Update(ctx, cluster)
	}
	return res, nil
}

// namespaceConflict: the cluster's namespace exists and was not made by the hub
// for this cluster. The hub never takes such a namespace over.
type namespaceConflict struct{ name, owner string }

func (e *namespaceConflict) Error() string {
	if e.owner != "" {
		return fmt.Sprintf("namespace %s belongs to managed cluster %s (label %s=%s); the hub will not grant this cluster access to it", e.name, e.owner, ocm.ClusterNameLabel, e.owner)
	}
	return fmt.Sprintf("namespace %s already exists and was not created by the hub for this cluster (no %s=%s label); the hub will not grant a managed cluster access to it: rename the cluster, or delete or label the namespace", e.name, ocm.ClusterNameLabel, e.name)
}

// ReasonNamespaceConflict is the HubAccepted=False reason when the cluster's
// namespace exists but is not the hub's for this cluster.
const ReasonNamespaceConflict = "ClusterNamespaceConflict"

// conflictRequeue is how often a cluster blocked by a foreign namespace is re-checked.
const conflictRequeue = time.Minute

// accept creates the cluster namespace and RBAC.
func (r *Reconciler) accept(ctx context.Context, name string) error {
	ns := &corev1.Namespace{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, ns)
	if apierrors.IsNotFound(err) {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: rbac.ClusterLabels(name)}}
		err = r.Client.Create(ctx, ns)
		if apierrors.IsAlreadyExists(err) {
			// Not in the cache: someone else's namespace (the cache holds only
			// labelled ones), or ours made a moment ago. The apiserver says which.
			err = r.reader().Get(ctx, client.ObjectKey{Name: name}, ns)
		}
	}
	switch {
	case err != nil:
		return fmt.Errorf("namespace: %w", err)
	case ns.Labels[ocm.ClusterNameLabel] != name:
		return &namespaceConflict{name: name, owner: ns.Labels[ocm.ClusterNameLabel]}
	}
	if !ns.DeletionTimestamp.IsZero() {
		return fmt.Errorf("namespace %s is still being deleted; retrying", name)
	}
	// The hub's own lease rights in the namespace come first: deployed as
	// Pods it writes Leases only where it bound itself, and it needs them to
	// create the cluster's Lease and to grant the agent RegistrationRole's
	// lease rules (RBAC lets it grant only what it holds there).
	created, err := applyRoleBindingCreated(ctx, r.Client, rbac.HubLeasesRoleBinding(name))
	if err != nil {
		return err
	}
	leaseWrite := func(write func() error) func() error {
		if !created {
			return write
		}
		return func() error { return retry.OnError(bindingSettles, apierrors.IsForbidden, write) }
	}
	// The cluster's RBAC and lease are independent of each other once its
	// namespace exists: written at once, not in sequence (five round trips
	// on a busy apiserver were most of an accept: test/bench/registration).
	// HubAccepted is reported only after all of them succeeded.
	var g errgroup.Group
	// The ClusterRoleBinding after its ClusterRole: RBAC checks a binding
	// against the rules of the role it names, and refuses it (NotFound) while
	// the role is missing, unless its writer is an admin.
	g.Go(func() error {
		created, err := applyClusterRoleCreated(ctx, r.Client, rbac.ClusterRole(name, true))
		if err != nil {
			return err
		}
		bind := func() error { return applyClusterRoleBinding(ctx, r.Client, rbac.ClusterRoleBinding(name)) }
		if created {
			return retry.OnError(bindingSettles, apierrors.IsNotFound, bind)
		}
		return bind()
	})
	g.Go(leaseWrite(func() error { return applyRoleBinding(ctx, r.Client, rbac.RegistrationRoleBinding(name)) }))
	g.Go(func() error { return applyRoleBinding(ctx, r.Client, rbac.WorkRoleBinding(name)) })
	g.Go(leaseWrite(func() error { return ensureLease(ctx, r.Client, name) }))
	return g.Wait()
}

// bindingSettles bounds the retries of a write refused right after the hub
// made what it depends on (a RoleBinding giving the hub the rights for it, a
// ClusterRole a binding names): RBAC sees a new object once the apiserver's
// authorizer has, a moment later (about 2.5 s in all).
var bindingSettles = wait.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Steps: 8}

func (r *Reconciler) reader() client.Reader {
	if r.Reader != nil {
		return r.Reader
	}
	return r.Client
}

// ensureLease creates the cluster's heartbeat Lease when it is missing, as
// OCM's hub does on acceptance: OCM's agents only get and update it.
func ensureLease(ctx context.Context, c client.Client, cluster string) error {
	lease := &coordinationv1.Lease{}
	err := c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: health.LeaseName}, lease)
	if !apierrors.IsNotFound(err) {
		return err
	}
	now := metav1.NowMicro()
	lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: health.LeaseName, Labels: rbac.ClusterLabels(cluster)},
		Spec: coordinationv1.LeaseSpec{RenewTime: &now}}
	if err := c.Create(ctx, lease); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("lease %s/%s: %w", cluster, health.LeaseName, err)
	}
	return nil
}

// deny shrinks the cluster's ClusterRole to read-only (when it has one) and
// removes its RoleBindings. It is idempotent and safe for a cluster that was never
// accepted (it then creates nothing). had reports whether any access object existed.
func (r *Reconciler) deny(ctx context.Context, name string) (had bool, err error) {
	role := &rbacv1.ClusterRole{}
	err = r.Client.Get(ctx, client.ObjectKey{Name: ocm.ClusterRoleName(name)}, role)
	switch {
	case err == nil:
		had = true
		if err := applyClusterRole(ctx, r.Client, rbac.ClusterRole(name, false)); err != nil {
			return had, err
		}
		if err := applyClusterRoleBinding(ctx, r.Client, rbac.ClusterRoleBinding(name)); err != nil {
			return had, err
		}
	case !apierrors.IsNotFound(err):
		return false, fmt.Errorf("clusterrole %s: %w", ocm.ClusterRoleName(name), err)
	}
	removed, err := deleteRoleBindings(ctx, r.Client, name)
	return had || removed, err
}

// deleteRoleBindings removes the cluster's RoleBindings; found reports whether any existed.
func deleteRoleBindings(ctx context.Context, c client.Client, name string) (found bool, err error) {
	for _, rb := range []*rbacv1.RoleBinding{rbac.RegistrationRoleBinding(name), rbac.WorkRoleBinding(name)} {
		ok, err := removeFinalizerAndDelete(ctx, c, rb, ocm.ManifestWorkFinalizer)
		if err != nil {
			return found, fmt.Errorf("rolebinding %s/%s: %w", rb.Namespace, rb.Name, err)
		}
		found = found || ok
	}
	return found, nil
}

// removeFinalizerAndDelete deletes obj (if present) after dropping finalizer from
// it; found reports whether it was there.
func removeFinalizerAndDelete(ctx context.Context, c client.Client, obj client.Object, finalizer string) (found bool, err error) {
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if finalizer != "" && controllerutil.RemoveFinalizer(obj, finalizer) {
		if err := c.Update(ctx, obj); err != nil {
			return true, client.IgnoreNotFound(err)
		}
	}
	return true, client.IgnoreNotFound(c.Delete(ctx, obj))
}

func applyClusterRole(ctx context.Context, c client.Client, want *rbacv1.ClusterRole) error {
	_, err := applyClusterRoleCreated(ctx, c, want)
	return err
}

// applyClusterRoleCreated is applyClusterRole; created reports that the role
// did not exist before.
func applyClusterRoleCreated(ctx context.Context, c client.Client, want *rbacv1.ClusterRole) (created bool, err error) {
	got := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: want.Name}}
	op, err := controllerutil.CreateOrUpdate(ctx, c, got, func() error {
		got.Labels, got.Rules = want.Labels, want.Rules
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("clusterrole %s: %w", want.Name, err)
	}
	return op == controllerutil.OperationResultCreated, nil
}

func applyClusterRoleBinding(ctx context.Context, c client.Client, want *rbacv1.ClusterRoleBinding) error {
	got := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: want.Name}}
	err := c.Get(ctx, client.ObjectKeyFromObject(got), got)
	if err == nil && got.RoleRef != want.RoleRef {
		// roleRef is immutable: replace the binding.
		if err := c.Delete(ctx, got); client.IgnoreNotFound(err) != nil {
			return err
		}
		err = apierrors.NewNotFound(rbacv1.Resource("clusterrolebindings"), want.Name)
	}
	switch {
	case apierrors.IsNotFound(err):
		err = c.Create(ctx, want.DeepCopy())
	case err == nil && (!equality.Semantic.DeepEqual(got.Subjects, want.Subjects) || !equality.Semantic.DeepEqual(got.Labels, want.Labels)):
		got.Subjects, got.Labels = want.Subjects, want.Labels
		err = c.Update(ctx, got)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("clusterrolebinding %s: %w", want.Name, err)
	}
	return nil
}

func applyRoleBinding(ctx context.Context, c client.Client, want *rbacv1.RoleBinding) error {
	_, err := applyRoleBindingCreated(ctx, c, want)
	return err
}

// applyRoleBindingCreated is applyRoleBinding; created reports that the
// binding did not exist before.
func applyRoleBindingCreated(ctx context.Context, c client.Client, want *rbacv1.RoleBinding) (created bool, err error) {
	got := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: want.Namespace}}
	op, err := controllerutil.CreateOrUpdate(ctx, c, got, func() error {
		if !got.CreationTimestamp.IsZero() && got.RoleRef != want.RoleRef {
			return fmt.Errorf("has roleRef %s, want %s: delete it to let the hub recreate it", got.RoleRef.Name, want.RoleRef.Name)
		}
		got.RoleRef, got.Subjects, got.Labels = want.RoleRef, want.Subjects, want.Labels
		for _, f := range want.Finalizers {
			controllerutil.AddFinalizer(got, f)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("rolebinding %s/%s: %w", want.Namespace, want.Name, err)
	}
	return op == controllerutil.OperationResultCreated, nil
}
