package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// copyInto overwrites the content fields of got with want's, for the kinds Init applies.
func copyInto(got, want client.Object) {
	switch w := want.(type) {
	case *rbacv1.ClusterRole:
		got.(*rbacv1.ClusterRole).Rules = w.Rules
	case *rbacv1.Role:
		got.(*rbacv1.Role).Rules = w.Rules
	case *rbacv1.ClusterRoleBinding:
		got.(*rbacv1.ClusterRoleBinding).Subjects = w.Subjects
	case *rbacv1.RoleBinding:
		got.(*rbacv1.RoleBinding).Subjects = w.Subjects
	}
}
