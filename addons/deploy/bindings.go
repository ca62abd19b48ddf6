package deploy

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/internal/ocm"
)

// CheckBindings says what is wrong with the role bindings an addon asks for on
// cluster: each binds within one namespace, which must not be another managed
// cluster's (isOtherCluster) nor one of the hub's or Kubernetes' own. nil when fine.
func CheckBindings(cluster string, bindings []framework.RoleBinding, isOtherCluster func(ns string) bool) error {
	for i, b := range bindings {
		ns := b.Namespace
		if ns == "" {
			ns = cluster
		}
		switch {
		case b.RoleRef.Name == "" || (b.RoleRef.Kind != "Role" && b.RoleRef.Kind != "ClusterRole"):
			return fmt.Errorf("hub permission %d: roleRef must name a Role or ClusterRole", i)
		case b.RoleRef.Kind == "ClusterRole" && (b.RoleRef.Name == "cluster-admin" || b.RoleRef.Name == "admin"):
			return fmt.Errorf("hub permission %d binds ClusterRole %q: an addon agent may not administer a namespace", i, b.RoleRef.Name)
		case ns != cluster && isOtherCluster(ns):
			return fmt.Errorf("hub permission %d names namespace %s, another managed cluster's: an addon agent of cluster %s gets rights outside other clusters' namespaces only", i, ns, cluster)
		case ns != cluster && (ns == "default" || strings.HasPrefix(ns, "kube-") || strings.HasPrefix(ns, "open-cluster-management") || strings.HasPrefix(ns, "flotilla")):
			return fmt.Errorf("hub permission %d names namespace %s, which belongs to the hub or Kubernetes itself", i, ns)
		}
	}
	return nil
}

// isOtherCluster reports whether ns is the namespace of a managed cluster other than cluster.
func (r *Reconciler) isOtherCluster(ctx context.Context, cluster string) func(string) bool {
	return func(ns string) bool {
		if ns == cluster {
			return false
		}
		err := r.reader.Get(ctx, types.NamespacedName{Name: ns}, &clusterv1.ManagedCluster{})
		return !apierrors.IsNotFound(err) // unreadable counts as another cluster's: refuse
	}
}

// bindingName names the i-th binding of addon's agent on cluster (one per
// cluster, so clusters sharing a namespace never overwrite each other's).
func bindingName(addon, cluster string, i int) string {
	return fmt.Sprintf("%s:%s:%d", ocm.AddonRoleName(addon), cluster, i)
}

// bind makes the addon's bindings on its cluster exactly want (nil: none).
func (r *Reconciler) bind(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, want []framework.RoleBinding) error {
	labels := map[string]string{ocm.AddonNameLabel: mca.Name, ocm.ClusterNameLabel: mca.Namespace}
	keep := map[types.NamespacedName]bool{}
	for i, b := range want {
		ns := b.Namespace
		if ns == "" {
			ns = mca.Namespace
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: bindingName(mca.Name, mca.Namespace, i), Namespace: ns}}
		keep[types.NamespacedName{Namespace: ns, Name: rb.Name}] = true
		ref := b.RoleRef
		ref.APIGroup = rbacv1.GroupName
		if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, rb, func() error {
			rb.Labels = labels
			rb.RoleRef = ref
			rb.Subjects = RoleBinding(mca.Name, mca.Namespace).Subjects
			return nil
		}); err != nil {
			if apierrors.IsInvalid(err) { // roleRef cannot change: recreate
				_ = r.Delete(ctx, rb)
			}
			return fmt.Errorf("write RoleBinding %s/%s: %w", ns, rb.Name, err)
		}
	}
	var list rbacv1.RoleBindingList
	if err := r.List(ctx, &list, client.MatchingLabels(labels)); err != nil {
		return err
	}
	for i := range list.Items {
		b := &list.Items[i]
		if !keep[types.NamespacedName{Namespace: b.Namespace, Name: b.Name}] {
			if err := client.IgnoreNotFound(r.Delete(ctx, b)); err != nil {
				return err
			}
		}
	}
	return nil
}

// templateFailed reports a template addon whose AddOnTemplate cannot be used.
func (r *Reconciler) templateFailed(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, cause error) error {
	before := mca.Status.DeepCopy()
	mca.Status.Conditions = Merge(mca.Status.Conditions, Conditions(Facts{Generation: mca.Generation, RenderErr: cause,
		Health: framework.HealthNone, Existing: mca.Status.Conditions}))
	if equalStatus(before, &mca.Status) {
		return nil
	}
	return client.IgnoreNotFound(r.Status().Update(ctx, mca))
}

func equalStatus(a, b *addonv1alpha1.ManagedClusterAddOnStatus) bool { return reflect.DeepEqual(a, b) }
