package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"flotilla.dev/flotilla/internal/conditions"
	"flotilla.dev/flotilla/internal/ocm"
)

// cleanupRequeue is how often a deletion waiting on remaining objects is retried.
const cleanupRequeue = 2 * time.Second

// cleanup runs when the ManagedCluster is being deleted: add-ons first, then
// works, then RBAC and the namespace, then the finalizer.
func (r *Reconciler) cleanup(ctx context.Context, cluster *clusterv1.ManagedCluster) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(cluster, clusterv1.ManagedClusterFinalizer) {
		return ctrl.Result{}, nil
	}
	ours, err := r.ownsNamespace(ctx, cluster.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	remaining := ""
	if ours {
		// Works and add-ons of a namespace the hub did not make for this
		// cluster are not this cluster's: leave them alone.
		remaining, err = r.deleteContent(ctx, cluster)
	}
	if err != nil || remaining != "" {
		cond := metav1.Condition{Type: clusterv1.ManagedClusterConditionDeleting, Status: metav1.ConditionFalse,
			Reason: clusterv1.ConditionDeletingReasonResourceRemaining, Message: "Waiting for " + remaining + " to be deleted"}
		if err != nil {
			cond.Reason, cond.Message = clusterv1.ConditionDeletingReasonResourceError, "Cleanup failed: "+err.Error()
		}
		before := cluster.Status.DeepCopy()
		meta.SetStatusCondition(&cluster.Status.Conditions, cond)
		conditions.Fit(ctx, r.Recorder, cluster)
		if !equality.Semantic.DeepEqual(before, &cluster.Status) {
			if uerr := r.Client.Status().Update(ctx, cluster); uerr != nil && err == nil {
				return ctrl.Result{}, uerr
			}
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: cleanupRequeue}, nil
	}
	if err := r.deleteAccess(ctx, cluster.Name); err != nil {
		return ctrl.Result{}, err
	}
	controllerutil.RemoveFinalizer(cluster, clusterv1.ManagedClusterFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Update(ctx, cluster))
}

// ownsNamespace reports whether the cluster's namespace is absent or was made by
// the hub for this cluster (labelled with its name).
func (r *Reconciler) ownsNamespace(ctx context.Context, name string) (bool, error) {
	ns := &corev1.Namespace{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, ns)
	if apierrors.IsNotFound(err) {
		// The cache holds only labelled namespaces: an unlabelled one is not
		// the hub's, and must not be taken for absent.
		err = r.reader().Get(ctx, client.ObjectKey{Name: name}, ns)
	}
	if err != nil {
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}
	return ns.Labels[ocm.ClusterNameLabel] == name, nil
}

// deleteContent deletes the cluster's add-ons, then its works. It returns a
// description of what is still there ("" when nothing is).
func (r *Reconciler) deleteContent(ctx context.Context, cluster *clusterv1.ManagedCluster) (string, error) {
	ns := cluster.Name
	addons := &addonv1alpha1.ManagedClusterAddOnList{}
	if err := r.Client.List(ctx, addons, client.InNamespace(ns)); err != nil && !meta.IsNoMatchError(err) {
		return "", fmt.Errorf("list add-ons: %w", err)
	}
	for i := range addons.Items {
		if err := r.Client.Delete(ctx, &addons.Items[i]); client.IgnoreNotFound(err) != nil {
			return "", fmt.Errorf("delete add-on %s/%s: %w", ns, addons.Items[i].Name, err)
		}
	}
	if n := len(addons.Items); n > 0 {
		return fmt.Sprintf("%d ManagedClusterAddOns", n), nil
	}
	works := &workv1.ManifestWorkList{}
	if err := r.Client.List(ctx, works, client.InNamespace(ns)); err != nil && !meta.IsNoMatchError(err) {
		return "", fmt.Errorf("list manifestworks: %w", err)
	}
	// An agent that is not available cannot remove its finalizers on works: the
	// hub does it, or the deletion would never end.
	agentGone := !meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
	for i := range works.Items {
		w := &works.Items[i]
		if w.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, w); client.IgnoreNotFound(err) != nil {
				return "", fmt.Errorf("delete manifestwork %s/%s: %w", ns, w.Name, err)
			}
		} else if agentGone && len(w.Finalizers) > 0 {
			w.Finalizers = nil
			if err := r.Client.Update(ctx, w); client.IgnoreNotFound(err) != nil {
				return "", fmt.Errorf("release manifestwork %s/%s: %w", ns, w.Name, err)
			}
		}
	}
	if n := len(works.Items); n > 0 {
		return fmt.Sprintf("%d ManifestWorks", n), nil
	}
	return "", nil
}

// deleteAccess removes every RBAC object and the namespace of the cluster.
func (r *Reconciler) deleteAccess(ctx context.Context, name string) error {
	if _, err := deleteRoleBindings(ctx, r.Client, name); err != nil {
		return err
	}
	for _, obj := range []client.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ocm.ClusterRoleName(name)}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ocm.ClusterRoleName(name)}},
	} {
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, obj)); err != nil {
			return fmt.Errorf("delete %s: %w", obj.GetName(), err)
		}
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return client.IgnoreNotFound(err)
	}
	// Only a namespace the hub made for this cluster is deleted.
	if ns.Labels[ocm.ClusterNameLabel] != name || !ns.DeletionTimestamp.IsZero() {
		return nil
	}
	return client.IgnoreNotFound(r.Client.Delete(ctx, ns))
}
