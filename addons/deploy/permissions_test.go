package deploy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		{"read leases", []rbacv1.PolicyRule{rule([]string{"coordination.k8s.io"}, []string{"leases"}, read)}, ""},
		{"write named leases", []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
			ResourceNames: []string{"my-addon"}, Verbs: []string{"get", "update"}}}, ""},
		// The cluster's heartbeat: an addon agent backdating it would make
		// its cluster unreachable to placements and hand the klusterlet's
		// identity to an auto-approve user.
		{"write every lease", []rbacv1.PolicyRule{rule([]string{"coordination.k8s.io"}, []string{"leases"}, []string{"create", "update"})}, "managed-cluster-lease"},
		{"write the cluster's lease", []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
			ResourceNames: []string{"managed-cluster-lease"}, Verbs: []string{"patch"}}}, "managed-cluster-lease"},
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

func TestCheckGrantable(t *testing.T) {
	rule := func(res string, verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{"x"}, Resources: []string{res}, Verbs: verbs}
	}
	tests := []struct {
		name  string
		kind  string
		role  string
		rules []rbacv1.PolicyRule
		want  string
	}{
		{"reads configmaps", "ClusterRole", "reader", []rbacv1.PolicyRule{rule("configmaps", "get", "list", "watch")}, ""},
		{"reads works", "ClusterRole", "reader", []rbacv1.PolicyRule{rule("manifestworks", "get", "list")}, ""},
		{"writes policy status", "Role", "status", []rbacv1.PolicyRule{rule("policies/status", "update", "patch")}, ""},
		{"the hub's own role", "ClusterRole", "open-cluster-management:flotilla-hub", nil, "system role"},
		{"a kubernetes system role", "ClusterRole", "system:controller:job-controller", nil, "system role"},
		{"edit", "ClusterRole", "edit", nil, "administers or edits"},
		{"creates works", "ClusterRole", "w", []rbacv1.PolicyRule{rule("manifestworks", "create")}, "create manifestworks"},
		{"patches placement decisions", "Role", "p", []rbacv1.PolicyRule{rule("placementdecisions", "get", "patch")}, "patch placementdecisions"},
		{"writes rolebindings", "Role", "rb", []rbacv1.PolicyRule{rule("rolebindings", "create")}, "create rolebindings"},
		{"reads secrets", "ClusterRole", "s", []rbacv1.PolicyRule{rule("secrets", "get")}, "secrets"},
		{"wildcard", "ClusterRole", "all", []rbacv1.PolicyRule{rule("*", "get")}, "wildcard"},
		{"escalates", "Role", "esc", []rbacv1.PolicyRule{rule("roles", "escalate")}, "escalate"},
		{"writes addon status (registrations)", "ClusterRole", "mca", []rbacv1.PolicyRule{rule("managedclusteraddons/status", "get", "update")},
			"update managedclusteraddons/status"},
		{"reads addon status", "ClusterRole", "mca", []rbacv1.PolicyRule{rule("managedclusteraddons/status", "get")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckGrantable(tt.kind, tt.role, tt.rules)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
