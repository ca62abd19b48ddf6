package ocm

import "fmt"

// Names of the addon framework (addon.open-cluster-management.io).
const (
	// AddonNameLabel marks an addon's CSRs and ManifestWorks with the addon's name.
	AddonNameLabel = "open-cluster-management.io/addon-name"
	// AddonPreDeleteHookLabel marks an addon manifest (a Job or Pod) that runs
	// once before the addon is removed from a cluster.
	AddonPreDeleteHookLabel = "open-cluster-management.io/addon-pre-delete"
	// AddonPreDeleteHookFinalizer keeps a ManagedClusterAddOn until its works,
	// and its pre-delete hook when it has one, are done.
	AddonPreDeleteHookFinalizer = "addon.open-cluster-management.io/addon-pre-delete"
	// DefaultAddonInstallNamespace is where addon agents run on a managed cluster
	// unless the ManagedClusterAddOn says otherwise.
	DefaultAddonInstallNamespace = "open-cluster-management-agent-addon"
	// AddonGroup is the API group of the addon resources.
	AddonGroup = "addon.open-cluster-management.io"
)

// OCM's names of the two governance addons. The addon's registration
// (addons/governance) and its agent (policy/agent: the Lease, the hub
// credential Secret, the source of its events) both name them.
const (
	// PolicyFrameworkAddon delivers the cluster's replica policies and reports
	// their compliance (spec, template and status sync).
	PolicyFrameworkAddon = "governance-policy-framework"
	// ConfigPolicyAddon runs the ConfigurationPolicy engine.
	ConfigPolicyAddon = "config-policy-controller"
)

// SearchAddon is the fleet search addon's name: its registration
// (addons/search), its agent (search/agent) and the hub's search API
// (search/apigroup, which checks a writer is this addon's agent) name it.
const SearchAddon = "search"

// AddonAgentUser is the user name (certificate CN) of an addon's agent on a cluster.
func AddonAgentUser(cluster, addon, agent string) string {
	return fmt.Sprintf("%scluster:%s:addon:%s:agent:%s", GroupPrefix, cluster, addon, agent)
}

// AddonClusterGroup is the group of one addon's agents on one cluster.
func AddonClusterGroup(cluster, addon string) string {
	return fmt.Sprintf("%scluster:%s:addon:%s", GroupPrefix, cluster, addon)
}

// AddonGroupName is the group of one addon's agents on every cluster.
func AddonGroupName(addon string) string { return GroupPrefix + "addon:" + addon }

// AddonHubKubeconfigSecret is the Secret, in the addon's install namespace on
// the managed cluster, holding the addon agent's hub credential.
func AddonHubKubeconfigSecret(addon string) string { return addon + "-hub-kubeconfig" }

// AddonDeployWorkName is the i-th ManifestWork delivering an addon's agent.
func AddonDeployWorkName(addon string, i int) string {
	return fmt.Sprintf("addon-%s-deploy-%d", addon, i)
}

// AddonPreDeleteWorkName is the ManifestWork running an addon's pre-delete hook.
func AddonPreDeleteWorkName(addon string) string { return "addon-" + addon + "-pre-delete" }

// AddonRoleName names the Role and RoleBinding granting an addon's agent its
// hub permissions in a cluster namespace.
func AddonRoleName(addon string) string { return "open-cluster-management:addon:" + addon }
