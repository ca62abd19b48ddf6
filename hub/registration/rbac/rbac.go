package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"flotilla.dev/flotilla/internal/ocm"
)

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"get", "list", "watch", "update", "patch"}
	eventVerbs = []string{"create", "patch", "update"}
)

func rule(group, resource string, verbs []string, names ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs, ResourceNames: names}
}

// eventRules lets an agent record events in the namespaces it is bound in.
func eventRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{rule("", "events", eventVerbs), rule("events.k8s.io", "events", eventVerbs)}
}

// ClusterLabels are the labels on every object the hub creates for one cluster.
func ClusterLabels(cluster string) map[string]string {
	return map[string]string{ocm.ClusterNameLabel: cluster}
}

// Labelled selects the objects that carry the cluster label (ClusterLabels):
// the namespaces and cluster-wide RBAC the hub made for its clusters. The
// hub's caches of Namespaces, ClusterRoles and ClusterRoleBindings hold only
// these; a reader that must also see the others (is a cluster's namespace
// someone else's?) asks the apiserver.
func Labelled() labels.Selector {
	req, err := labels.NewRequirement(ocm.ClusterNameLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid label key
	}
	return labels.NewSelector().Add(*req)
}

// ClusterRules are the cluster-scoped permissions of an accepted cluster's agent:
// create and follow its own CSRs, renew its certificate, and read and update its
// own ManagedCluster (and its status) only. Nothing names another cluster.
func ClusterRules(cluster string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule("certificates.k8s.io", "certificatesigningrequests", []string{"create", "get", "list", "watch"}),
		rule(ocm.RegisterGroup, "managedclusters/clientcertificates", []string{"renew"}, cluster),
		rule(ocm.ClusterGroup, "managedclusters", []string{"get", "list", "watch", "update"}, cluster),
		rule(ocm.ClusterGroup, "managedclusters/status", []string{"patch", "update"}, cluster),
	}
}

// DeniedClusterRules are what a cluster keeps after the hub stops accepting it:
// it may read its own ManagedCluster (to learn it was denied) and nothing else.
func DeniedClusterRules(cluster string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{rule(ocm.ClusterGroup, "managedclusters", readVerbs, cluster)}
}

// ClusterRole is the per-cluster ClusterRole; accepted selects the full or the
// read-only rule set.
func ClusterRole(cluster string, accepted bool) *rbacv1.ClusterRole {
	rules := DeniedClusterRules(cluster)
	if accepted {
		rules = ClusterRules(cluster)
	}
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ocm.ClusterRoleName(cluster), Labels: ClusterLabels(cluster)},
		Rules:      rules,
	}
}

func clusterSubject(cluster string) []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: ocm.ClusterGroupName(cluster)}}
}

// ClusterRoleBinding binds the per-cluster ClusterRole to the cluster's group.
func ClusterRoleBinding(cluster string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ocm.ClusterRoleName(cluster), Labels: ClusterLabels(cluster)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ocm.ClusterRoleName(cluster)},
		Subjects:   clusterSubject(cluster),
	}
}

// RegistrationRole is the shared ClusterRole that, bound by a RoleBinding in a
// cluster namespace, lets that cluster's agent renew its lease, manage its add-ons
// and record events there.
func RegistrationRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ocm.RegistrationRoleName},
		Rules: append([]rbacv1.PolicyRule{
			// As upstream: the hub creates managed-cluster-lease on accept; the
			// agent only reads and renews it.
			rule("coordination.k8s.io", "leases", []string{"get", "list", "watch", "update"}),
			rule("addon.open-cluster-management.io", "managedclusteraddons", writeVerbs),
			rule("addon.open-cluster-management.io", "managedclusteraddons/status", []string{"patch", "update"}),
			rule("addon.open-cluster-management.io", "managedclusteraddons/finalizers", []string{"update"}),
		}, eventRules()...),
	}
}

// WorkRole is the shared ClusterRole that, bound in a cluster namespace, lets the
// work agent read its ManifestWorks, add its finalizer and report status.
func WorkRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ocm.WorkRoleName},
		Rules: append([]rbacv1.PolicyRule{
			rule("work.open-cluster-management.io", "manifestworks", writeVerbs),
			rule("work.open-cluster-management.io", "manifestworks/status", []string{"patch", "update"}),
			rule("work.open-cluster-management.io", "manifestworks/finalizers", []string{"update"}),
		}, eventRules()...),
	}
}

func roleBinding(cluster, name, role string, finalizers ...string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cluster, Labels: ClusterLabels(cluster), Finalizers: finalizers},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   clusterSubject(cluster),
	}
}

// RegistrationRoleBinding binds RegistrationRole in the cluster namespace.
func RegistrationRoleBinding(cluster string) *rbacv1.RoleBinding {
	return roleBinding(cluster, ocm.RegistrationRoleBindingName(cluster), ocm.RegistrationRoleName)
}

// WorkRoleBinding binds WorkRole in the cluster namespace. It carries the
// manifest-work-cleanup finalizer so the agent keeps access until its works are gone.
func WorkRoleBinding(cluster string) *rbacv1.RoleBinding {
	return roleBinding(cluster, ocm.WorkRoleBindingName(cluster), ocm.WorkRoleName, ocm.ManifestWorkFinalizer)
}

// The ClusterRole the hub's own identity when it runs as Pods (ServiceAccount
// ocm.HubName in ocm.HubNamespace: `flotilla init --deploy`,
// manifests/hub/00-rbac.yaml) binds to itself in each cluster namespace: its rights on that namespace's Leases
// (it creates managed-cluster-lease, and holds the lease rights it grants the
// agent through RegistrationRole). The manifests give it `bind` on exactly
// that ClusterRole and no lease write anywhere else.
const (
	HubClusterLeasesRole    = "open-cluster-management:flotilla-hub:cluster-leases"
	hubClusterLeasesBinding = HubClusterLeasesRole
)

// HubLeasesRoleBinding binds HubClusterLeasesRole to the hub's ServiceAccount
// in the cluster namespace. A hub run with other credentials (an admin's
// kubeconfig: `flotilla hub`, `flotilla dev up`) needs it not, and where
// manifests/hub was never applied the ClusterRole does not exist: the binding
// is then inert, and ready for a hub later deployed as Pods.
func HubLeasesRoleBinding(cluster string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: hubClusterLeasesBinding, Namespace: cluster, Labels: ClusterLabels(cluster)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: HubClusterLeasesRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ocm.HubName, Namespace: ocm.HubNamespace}},
	}
}

// BootstrapRules are exactly what a bootstrap identity may do: create and follow
// CSRs, create and read ManagedClusters, and join cluster sets.
func BootstrapRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule("certificates.k8s.io", "certificatesigningrequests", []string{"create", "get", "list", "watch"}),
		rule(ocm.ClusterGroup, "managedclusters", []string{"get", "create", "list", "watch"}),
		rule(ocm.ClusterGroup, "managedclustersets/join", []string{"create"}),
	}
}

// BootstrapClusterRole is open-cluster-management:bootstrap.
func BootstrapClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ocm.BootstrapClusterRoleName}, Rules: BootstrapRules()}
}

func bootstrapSubjects() []rbacv1.Subject {
	return []rbacv1.Subject{
		{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: ocm.BootstrapGroup},
		{Kind: rbacv1.ServiceAccountKind, Name: ocm.BootstrapServiceAccount, Namespace: ocm.BootstrapNamespace},
	}
}

// BootstrapClusterRoleBinding binds the bootstrap ClusterRole to the bootstrap
// group and ServiceAccount.
func BootstrapClusterRoleBinding() *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ocm.BootstrapClusterRoleName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ocm.BootstrapClusterRoleName},
		Subjects:   bootstrapSubjects(),
	}
}

// ClusterInfoRole lets bootstrap identities read kube-public/cluster-info (the hub's
// CA and address) and nothing else of the configmaps. Upstream grants get on every
// configmap; one object is enough.
func ClusterInfoRole() (*rbacv1.Role, *rbacv1.RoleBinding) {
	name := "open-cluster-management:bootstrap:cluster-info"
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespacePublic},
		Rules:      []rbacv1.PolicyRule{rule("", "configmaps", []string{"get"}, "cluster-info")},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespacePublic},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   bootstrapSubjects(),
	}
	return role, binding
}
