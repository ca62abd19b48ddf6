package rbac

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	rbacv1 "k8s.io/api/rbac/v1"

	"flotilla.dev/flotilla/internal/ocm"
)

// grants reports whether rules allow verb on group/resource (name "" = any object).
func grants(rules []rbacv1.PolicyRule, group, resource, verb, name string) bool {
	for _, r := range rules {
		if (slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, "*")) &&
			(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*")) &&
			(slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) &&
			(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, name)) {
			return true
		}
	}
	return false
}

func TestLeastPrivilege(t *testing.T) {
	accepted := ClusterRole("cluster1", true).Rules
	denied := ClusterRole("cluster1", false).Rules
	ns := append(RegistrationRole().Rules, WorkRole().Rules...)
	tests := []struct {
		name                          string
		rules                         []rbacv1.PolicyRule
		group, resource, verb, object string
		want                          bool
	}{
		{"accepted: update own cluster", accepted, ocm.ClusterGroup, "managedclusters", "update", "cluster1", true},
		{"accepted: update own status", accepted, ocm.ClusterGroup, "managedclusters/status", "patch", "cluster1", true},
		{"accepted: renew own cert", accepted, ocm.RegisterGroup, "managedclusters/clientcertificates", "renew", "cluster1", true},
		{"accepted: create CSR", accepted, "certificates.k8s.io", "certificatesigningrequests", "create", "", true},
		{"accepted: not another cluster", accepted, ocm.ClusterGroup, "managedclusters", "get", "cluster2", false},
		{"accepted: not another cluster's status", accepted, ocm.ClusterGroup, "managedclusters/status", "update", "cluster2", false},
		{"accepted: not renew for another", accepted, ocm.RegisterGroup, "managedclusters/clientcertificates", "renew", "cluster2", false},
		{"accepted: not accept itself", accepted, ocm.RegisterGroup, "managedclusters/accept", "update", "cluster1", false},
		{"accepted: not approve CSRs", accepted, "certificates.k8s.io", "certificatesigningrequests/approval", "update", "", false},
		{"accepted: not secrets", accepted, "", "secrets", "list", "", false},
		{"accepted: not delete own cluster", accepted, ocm.ClusterGroup, "managedclusters", "delete", "cluster1", false},
		{"denied: read own cluster", denied, ocm.ClusterGroup, "managedclusters", "get", "cluster1", true},
		{"denied: no update", denied, ocm.ClusterGroup, "managedclusters", "update", "cluster1", false},
		{"denied: no status", denied, ocm.ClusterGroup, "managedclusters/status", "patch", "cluster1", false},
		{"denied: no renew", denied, ocm.RegisterGroup, "managedclusters/clientcertificates", "renew", "cluster1", false},
		{"namespace roles: leases", ns, "coordination.k8s.io", "leases", "update", "managed-cluster-lease", true},
		{"namespace roles: read leases", ns, "coordination.k8s.io", "leases", "get", "managed-cluster-lease", true},
		{"namespace roles: not create leases (the hub does)", ns, "coordination.k8s.io", "leases", "create", "", false},
		{"namespace roles: not patch leases", ns, "coordination.k8s.io", "leases", "patch", "managed-cluster-lease", false},
		{"namespace roles: not delete leases", ns, "coordination.k8s.io", "leases", "delete", "managed-cluster-lease", false},
		{"namespace roles: works", ns, "work.open-cluster-management.io", "manifestworks/status", "patch", "", true},
		{"namespace roles: not create works", ns, "work.open-cluster-management.io", "manifestworks", "create", "", false},
		{"namespace roles: not secrets", ns, "", "secrets", "get", "", false},
		{"bootstrap: create CSR", BootstrapRules(), "certificates.k8s.io", "certificatesigningrequests", "create", "", true},
		{"bootstrap: create cluster", BootstrapRules(), ocm.ClusterGroup, "managedclusters", "create", "", true},
		{"bootstrap: not update cluster", BootstrapRules(), ocm.ClusterGroup, "managedclusters", "update", "x", false},
		{"bootstrap: not status", BootstrapRules(), ocm.ClusterGroup, "managedclusters/status", "update", "x", false},
		{"bootstrap: not approve", BootstrapRules(), "certificates.k8s.io", "certificatesigningrequests/approval", "update", "", false},
		{"bootstrap: not configmaps", BootstrapRules(), "", "configmaps", "get", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, grants(tt.rules, tt.group, tt.resource, tt.verb, tt.object))
		})
	}
}

func TestBindingsTargetClusterGroupOnly(t *testing.T) {
	for _, subjects := range [][]rbacv1.Subject{
		ClusterRoleBinding("c1").Subjects, RegistrationRoleBinding("c1").Subjects, WorkRoleBinding("c1").Subjects,
	} {
		assert.Equal(t, []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:open-cluster-management:c1"}}, subjects)
	}
	assert.Equal(t, "c1", RegistrationRoleBinding("c1").Namespace)
	assert.Contains(t, WorkRoleBinding("c1").Finalizers, ocm.ManifestWorkFinalizer)
	assert.Equal(t, "system:open-cluster-management:c1:agent", ocm.AgentUserName("c1", "agent"))
}
