package deploy

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"flotilla.dev/flotilla/internal/ocm"
)

// clusterScoped are resources a Role cannot grant (they are cluster-scoped), so
// asking for them in a cluster namespace is a mistake or a bid for more.
var clusterScoped = map[string]bool{
	"namespaces": true, "nodes": true, "persistentvolumes": true, "clusterroles": true, "clusterrolebindings": true,
	"customresourcedefinitions": true, "certificatesigningrequests": true, "managedclusters": true,
	"managedclustersets": true, "clustermanagementaddons": true, "addontemplates": true,
	"validatingwebhookconfigurations": true, "mutatingwebhookconfigurations": true, "storageclasses": true,
	"priorityclasses": true, "apiservices": true,
}

// escalating verbs let a holder grant or assume rights it does not have.
var escalating = []string{"escalate", "bind", "impersonate", "approve", "sign", "*"}

// CheckPermissions says what is wrong with the hub rights an addon asks for its
// agent: they must fit in a Role in the cluster namespace, name their resources
// and verbs (no wildcards), and grant nothing that escalates. nil when fine.
func CheckPermissions(rules []rbacv1.PolicyRule) error {
	for i, r := range rules {
		switch {
		case len(r.NonResourceURLs) > 0:
			return fmt.Errorf("permission %d asks for nonResourceURLs %v: an addon agent gets rights in its cluster namespace only", i, r.NonResourceURLs)
		case len(r.Resources) == 0 || len(r.Verbs) == 0:
			return fmt.Errorf("permission %d names no resource or no verb", i)
		case slices.Contains(r.APIGroups, "*") || slices.Contains(r.Resources, "*"):
			return fmt.Errorf("permission %d uses a wildcard (apiGroups %v, resources %v): name the resources the agent needs", i, r.APIGroups, r.Resources)
		}
		for _, res := range r.Resources {
			if clusterScoped[res] {
				return fmt.Errorf("permission %d asks for cluster-scoped %q: an addon agent gets rights in its cluster namespace only, never cluster-wide", i, res)
			}
		}
		for _, v := range r.Verbs {
			if slices.Contains(escalating, v) {
				return fmt.Errorf("permission %d asks for verb %q, which would let the agent escalate its rights", i, v)
			}
		}
		if err := checkClusterLease(r); err != nil {
			return fmt.Errorf("permission %d: %w", i, err)
		}
	}
	return nil
}

// checkClusterLease refuses a write that could reach the cluster's own
// heartbeat, Lease managed-cluster-lease in its namespace: the hub decides
// from it whether the cluster is reachable (placements skip one that is not)
// and whether an auto-approve user may have the klusterlet's identity (a
// cluster silent for its grace is given to it). Only the klusterlet renews
// it. The hub can grant lease writes in a cluster namespace (it holds them
// there, to make that lease), so an addon agent asking for them would get
// them. Reading leases, and writing leases named otherwise, is fine.
func checkClusterLease(r rbacv1.PolicyRule) error {
	if !slices.Contains(r.Resources, "leases") {
		return nil
	}
	writes := slices.ContainsFunc(r.Verbs, func(v string) bool { return !slices.Contains(readOnly, v) })
	if writes && (len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, clusterLease)) {
		return fmt.Errorf("writes leases %v: an addon agent may write only leases it names, never %s (the cluster's heartbeat, which decides its health and its auto-approval)",
			r.ResourceNames, clusterLease)
	}
	return nil
}

// clusterLease is the klusterlet's heartbeat Lease in the cluster namespace
// (health.LeaseName; not imported: the hub's registration packages import
// nothing of the addons).
const clusterLease = "managed-cluster-lease"

// Role is the Role granting addon's agent rules in the cluster namespace.
func Role(addon, cluster string, rules []rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: ocm.AddonRoleName(addon), Namespace: cluster, Labels: map[string]string{ocm.AddonNameLabel: addon}},
		Rules:      rules,
	}
}

// RoleBinding binds Role to the group of addon's agents on cluster.
func RoleBinding(addon, cluster string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ocm.AddonRoleName(addon), Namespace: cluster, Labels: map[string]string{ocm.AddonNameLabel: addon}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: ocm.AddonRoleName(addon)},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: ocm.AddonClusterGroup(cluster, addon)}},
	}
}

// controlling are the hub resources whose write lets a holder deliver to
// clusters, decide where things go, or change who may do what. A role bound to
// an addon agent (AddOnTemplate hubPermissions, Go addons' bindings) never
// writes them; a subresource such as policies/status is judged on its own.
var controlling = map[string]bool{
	"manifestworks": true, "manifestworkreplicasets": true, "placements": true, "placementdecisions": true,
	"policies": true, "placementbindings": true, "policysets": true, "managedclusteraddons": true,
	"addondeploymentconfigs": true, "roles": true, "rolebindings": true, "serviceaccounts": true,
	"serviceaccounts/token": true, "pods": true, "pods/exec": true, "deployments": true,
	// The registrations the hub declares there decide which CSRs it approves
	// and signs; the VAP that keeps a cluster's agent off them does not match
	// an addon agent's groups.
	"managedclusteraddons/status": true,
}

var readOnly = []string{"get", "list", "watch"}

// protectedRole says why a role may not be bound to an addon agent by name:
// the Kubernetes and OCM/Flotilla system roles (the hub's own role among them:
// the hub can bind any role whose rules it holds). Empty when it may.
func protectedRole(kind, name string) string {
	if kind != "ClusterRole" {
		return ""
	}
	for _, p := range []string{"system:", "open-cluster-management:", "flotilla"} {
		if strings.HasPrefix(name, p) {
			return fmt.Sprintf("ClusterRole %q is a system role (prefix %q)", name, p)
		}
	}
	switch name {
	case "cluster-admin", "admin", "edit":
		return fmt.Sprintf("ClusterRole %q administers or edits a namespace", name)
	}
	return ""
}

// CheckGrantable says what is wrong with binding a role with these rules to an
// addon agent: what CheckPermissions refuses, any right on Secrets, and any
// write of a controlling resource. nil when fine.
func CheckGrantable(kind, name string, rules []rbacv1.PolicyRule) error {
	if why := protectedRole(kind, name); why != "" {
		return fmt.Errorf("%s: an addon agent may not hold it", why)
	}
	if err := CheckPermissions(rules); err != nil {
		return fmt.Errorf("%s %q: %w", kind, name, err)
	}
	for i, r := range rules {
		for _, res := range r.Resources {
			if res == "secrets" {
				return fmt.Errorf("%s %q rule %d grants rights on secrets: an addon agent gets hub credentials only through its own registration", kind, name, i)
			}
			if !controlling[res] {
				continue
			}
			for _, v := range r.Verbs {
				if !slices.Contains(readOnly, v) {
					return fmt.Errorf("%s %q rule %d lets the agent %s %s: an addon agent never writes what decides delivery, placement, policy or rights on the hub", kind, name, i, v, res)
				}
			}
		}
	}
	return nil
}
