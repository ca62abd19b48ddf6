package deploy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	rbacv1 "k8s.io/api/rbac/v1"

	"flotilla.dev/flotilla/addons/framework"
)

func rule(groups, resources, verbs []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: verbs}
}

func TestCheckPermissions(t *testing.T) {
	read := []string{"get", "list", "watch"}
	for _, tc := range []struct {
		name  string
		rules []rbacv1.PolicyRule
		bad   string // substring of the error, "" = accepted
	}{
		{"none", nil, ""},
		{"read configmaps", []rbacv1.PolicyRule{rule([]string{""}, []string{"configmaps"}, read)}, ""},
		{"write leases", []rbacv1.PolicyRule{rule([]string{"coordination.k8s.io"}, []string{"leases"}, []string{"create", "update"})}, ""},
		{"cluster-scoped namespaces", []rbacv1.PolicyRule{rule([]string{""}, []string{"namespaces"}, read)}, "cluster-scoped \"namespaces\""},
		{"cluster-scoped clusterroles", []rbacv1.PolicyRule{rule([]string{"rbac.authorization.k8s.io"}, []string{"clusterroles"}, []string{"create"})}, "never cluster-wide"},
		{"non-resource URLs", []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}, "nonResourceURLs"},
		{"wildcard resources", []rbacv1.PolicyRule{rule([]string{""}, []string{"*"}, read)}, "wildcard"},
		{"wildcard groups", []rbacv1.PolicyRule{rule([]string{"*"}, []string{"secrets"}, read)}, "wildcard"},
		{"wildcard verbs", []rbacv1.PolicyRule{rule([]string{""}, []string{"secrets"}, []string{"*"})}, "escalate"},
		{"bind", []rbacv1.PolicyRule{rule([]string{"rbac.authorization.k8s.io"}, []string{"roles"}, []string{"bind"})}, "escalate"},
		{"no verb", []rbacv1.PolicyRule{rule([]string{""}, []string{"secrets"}, nil)}, "no verb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPermissions(tc.rules)
			if tc.bad == "" {
				assert.NoError(t, err)
				return
			}
			if assert.Error(t, err) {
				assert.Contains(t, err.Error(), tc.bad)
			}
		})
	}
}

func TestRoleBindingNamesTheAddonGroupOfOneCluster(t *testing.T) {
	b := RoleBinding("example", "cluster1")
	assert.Equal(t, "cluster1", b.Namespace)
	assert.Equal(t, "Role", b.RoleRef.Kind)
	assert.Equal(t, []rbacv1.Subject{{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:open-cluster-management:cluster:cluster1:addon:example"}}, b.Subjects)
}

func TestCheckBindings(t *testing.T) {
	others := func(ns string) bool { return ns == "cluster2" }
	ref := func(kind, name string) rbacv1.RoleRef { return rbacv1.RoleRef{Kind: kind, Name: name} }
	for _, tc := range []struct {
		name string
		b    []framework.RoleBinding
		bad  string
	}{
		{"own namespace", []framework.RoleBinding{{RoleRef: ref("ClusterRole", "reader")}}, ""},
		{"shared namespace", []framework.RoleBinding{{Namespace: "shared", RoleRef: ref("Role", "r")}}, ""},
		{"another cluster's namespace", []framework.RoleBinding{{Namespace: "cluster2", RoleRef: ref("ClusterRole", "reader")}}, "another managed cluster's"},
		{"hub namespace", []framework.RoleBinding{{Namespace: "open-cluster-management-hub", RoleRef: ref("ClusterRole", "reader")}}, "belongs to the hub"},
		{"kube-system", []framework.RoleBinding{{Namespace: "kube-system", RoleRef: ref("ClusterRole", "reader")}}, "belongs to the hub"},
		{"admin", []framework.RoleBinding{{RoleRef: ref("ClusterRole", "cluster-admin")}}, "may not administer"},
		{"no kind", []framework.RoleBinding{{RoleRef: ref("", "x")}}, "Role or ClusterRole"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckBindings("cluster1", tc.b, others)
			if tc.bad == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.bad)
			}
		})
	}
}
