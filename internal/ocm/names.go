package ocm

import (
	"fmt"
	"strings"
)

// OCM identity names. The hub, the agent and the CLI all derive names from these.
const (
	// GroupPrefix prefixes every registration identity.
	GroupPrefix = "system:open-cluster-management:"
	// ManagedClustersGroup is the group every managed cluster's agent belongs to.
	ManagedClustersGroup = "system:open-cluster-management:managed-clusters"

	// BootstrapClusterRole lets a bootstrap identity create its ManagedCluster and CSR.
	BootstrapClusterRoleName = "open-cluster-management:bootstrap"
	// BootstrapGroup is the group of bootstrap tokens for managed clusters.
	BootstrapGroup = "system:bootstrappers:managedcluster"
	// BootstrapNamespace holds the bootstrap ServiceAccount.
	BootstrapNamespace = "open-cluster-management"
	// BootstrapServiceAccount is the ServiceAccount whose tokens `init` mints.
	BootstrapServiceAccount = "agent-registration-bootstrap"

	// ManifestWorkFinalizer keeps the work RoleBinding until the cluster's works are gone.
	ManifestWorkFinalizer = "cluster.open-cluster-management.io/manifest-work-cleanup"

	// ClusterNameLabel marks objects belonging to one cluster (namespace, RBAC, CSRs).
	ClusterNameLabel = "open-cluster-management.io/cluster-name"

	// RegisterGroup is the API group of the virtual registration subresources.
	RegisterGroup = "register.open-cluster-management.io"
	// ClusterGroup is the API group of ManagedCluster.
	ClusterGroup = "cluster.open-cluster-management.io"

	// HubNamespace is the hub's own namespace (OCM's name for it): the hub
	// Pods of `flotilla init --deploy`, their Lease and Secrets, the addon
	// signer's CA.
	HubNamespace = "open-cluster-management-hub"
	// HubName names the hub's own objects there: its Deployment, Service,
	// ServiceAccount and leader-election Lease (Flotilla's name).
	HubName = "flotilla-hub"
)

// HistoryLabel marks the compliance events the governance framework agent
// forwards to the hub (value "true"), so that the hub's history recorder
// (policy/compliance/history/recorder) watches only them. Flotilla's, not OCM's;
// the addon writes it and the recorder selects on it, so it lives here.
const HistoryLabel = "flotilla.dev/compliance-history"

// ClusterGroupName is the group of a cluster's agent: system:open-cluster-management:<cluster>.
func ClusterGroupName(cluster string) string { return GroupPrefix + cluster }

// AgentUserName is the user name (certificate CN) of one agent of a cluster.
func AgentUserName(cluster, agent string) string {
	return fmt.Sprintf("%s%s:%s", GroupPrefix, cluster, agent)
}

// ClusterRoleName is the name of a cluster's ClusterRole and ClusterRoleBinding.
func ClusterRoleName(cluster string) string {
	return "open-cluster-management:managedcluster:" + cluster
}

// RegistrationRoleBindingName is the RoleBinding in the cluster namespace for the
// registration agent (leases, addons, events).
func RegistrationRoleBindingName(cluster string) string {
	return "open-cluster-management:managedcluster:" + cluster + ":registration"
}

// WorkRoleBindingName is the RoleBinding in the cluster namespace for the work agent.
func WorkRoleBindingName(cluster string) string {
	return "open-cluster-management:managedcluster:" + cluster + ":work"
}

// RegistrationRoleName and WorkRoleName are the shared ClusterRoles the RoleBindings refer to.
const (
	RegistrationRoleName = "open-cluster-management:managedcluster:registration"
	WorkRoleName         = "open-cluster-management:managedcluster:work"
)

// BootstrapServiceAccountUser is the user name of the bootstrap ServiceAccount.
func BootstrapServiceAccountUser() string {
	return "system:serviceaccount:" + BootstrapNamespace + ":" + BootstrapServiceAccount
}

// ReservedName says why name may not be a managed cluster's name ("" when it
// may). A cluster's name becomes a hub namespace (the agent may write leases and
// events there) and the group system:open-cluster-management:<name> in its
// certificate, so names of the hub's own namespaces and of the group shared by
// every agent are refused.
func ReservedName(name string) string {
	switch {
	case name == "default":
		return "it is the hub's default namespace"
	case name == "managed-clusters":
		return "its group " + ClusterGroupName(name) + " is the group every managed cluster's agent belongs to"
	case strings.HasPrefix(name, "kube-"):
		return "kube-* namespaces belong to Kubernetes itself"
	case strings.HasPrefix(name, "open-cluster-management"):
		return "open-cluster-management* namespaces belong to the hub and its agents"
	case strings.HasPrefix(name, "flotilla"):
		return "flotilla* namespaces belong to the Flotilla hub"
	}
	return ""
}
