// Package worktest helps tests and benchmarks run a work agent against a real
// hub before (or without) registration: it gives a cluster's agent the hub
// identity and RBAC that registration would.
package worktest

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// AgentHubConfig is admin impersonating the identity registration gives a
// cluster's agent: user system:open-cluster-management:<cluster>:agent in the
// groups system:open-cluster-management:<cluster> and
// system:open-cluster-management:managed-clusters.
func AgentHubConfig(admin *rest.Config, cluster string) *rest.Config {
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:open-cluster-management:" + cluster + ":agent",
		Groups: []string{"system:open-cluster-management:" + cluster,
			"system:open-cluster-management:managed-clusters", "system:authenticated"},
	}
	return cfg
}

// GrantWorkAgent creates the cluster's hub namespace and, in it, the Role and
// RoleBinding the hub gives a cluster's work agent on acceptance: manifestworks
// (get, list, watch, update, patch), manifestworks/status (update, patch) and
// events, bound to the group system:open-cluster-management:<cluster>.
func GrantWorkAgent(ctx context.Context, admin *rest.Config, cluster string) error {
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	name := "open-cluster-management:managedcluster:" + cluster + ":work"
	_, err = cs.RbacV1().Roles(cluster).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"work.open-cluster-management.io"}, Resources: []string{"manifestworks"},
				Verbs: []string{"get", "list", "watch", "update", "patch"}},
			{APIGroups: []string{"work.open-cluster-management.io"}, Resources: []string{"manifestworks/status"},
				Verbs: []string{"update", "patch"}},
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
		},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, err = cs.RbacV1().RoleBindings(cluster).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "system:open-cluster-management:" + cluster}},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
