// Package governance delivers the spoke side of governance as the two addons
// OCM names: governance-policy-framework (spec sync, template sync and status
// sync between the cluster's replica policies on the hub and the managed
// cluster) and config-policy-controller (the ConfigurationPolicy,
// OperatorPolicy and CertificatePolicy engines on the managed cluster). It holds the addons' registration only: their names,
// manifests, hub rights and health. Their agents live beside the engine, in
// package policy/agent.
//
// Each agent is a flotilla subcommand (`flotilla addon-agent <addon>`) with
// its own hub credential from addon registration. The framework agent's hub
// rights are confined to its cluster namespace: read Policies, write their
// status. The config-policy-controller's credential has no hub rights; it
// only authenticates.
package governance

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/addons/framework"
	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/image"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/manifests"
	"flotilla.dev/flotilla/policy/gatekeeper"
	"flotilla.dev/flotilla/policy/hubtemplate"
)

const (
	// FrameworkName is OCM's name of the policy framework addon.
	FrameworkName = ocm.PolicyFrameworkAddon
	// ConfigPolicyName is OCM's name of the configuration policy addon.
	ConfigPolicyName = ocm.ConfigPolicyAddon
	// DefaultImage runs the agents when delivered as Deployments and no image
	// is set (the hub sets its --addon-image).
	DefaultImage = image.DefaultRegistry + "/" + image.Repository + ":latest"
)

// FrameworkHubRules are the framework agent's hub rights, in its cluster
// namespace only: read the replicas, write their status, and create the
// compliance events it forwards (HubEvents) for the hub's history.
var FrameworkHubRules = []rbacv1.PolicyRule{
	{APIGroups: []string{policyv1.GroupName}, Resources: []string{"policies"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{policyv1.GroupName}, Resources: []string{"policies/status"}, Verbs: []string{"get", "update", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	// The cluster's key for the values hub templates protect.
	{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{hubtemplate.KeySecret}, Verbs: []string{"get"}},
}

// Framework is the governance-policy-framework addon.
type Framework struct {
	// Image of the agent Deployment, before an AddOnDeploymentConfig's
	// registries apply. Default DefaultImage.
	Image string
}

// ConfigPolicy is the config-policy-controller addon.
type ConfigPolicy struct {
	// Image of the agent Deployment, before an AddOnDeploymentConfig's
	// registries apply. Default DefaultImage.
	Image string
}

var (
	_ framework.Addon        = Framework{}
	_ framework.Addon        = ConfigPolicy{}
	_ framework.Configurable = Framework{}
	_ framework.Configurable = ConfigPolicy{}
)

// Name implements framework.Addon.
func (Framework) Name() string { return FrameworkName }

// Name implements framework.Addon.
func (ConfigPolicy) Name() string { return ConfigPolicyName }

// Options implements framework.Addon.
func (Framework) Options() framework.Options {
	return framework.Options{
		DisplayName:  "Policy Framework",
		Description:  "Syncs the cluster's replica policies from the hub, creates their templates and reports their compliance to the hub",
		Registration: &framework.Registration{Permissions: FrameworkHubRules},
		Health:       framework.Health{Mode: framework.HealthLease},
	}
}

// Options implements framework.Addon.
func (ConfigPolicy) Options() framework.Options {
	return framework.Options{
		DisplayName:  "Config Policy Addon",
		Description:  "Evaluates and enforces ConfigurationPolicies and OperatorPolicies, and checks CertificatePolicies, on the managed cluster",
		Registration: &framework.Registration{},
		Health:       framework.Health{Mode: framework.HealthLease},
	}
}

// Manifests implements framework.Addon: the Policy CRD, the agent's
// ServiceAccount and rights on the managed cluster, and its Deployment.
func (a Framework) Manifests(cluster *clusterv1.ManagedCluster, mca *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
	return a.ManifestsWithConfig(cluster, mca, nil)
}

// ManifestsWithConfig implements framework.Configurable: cfg's registries and
// node placement shape the agent's Deployment.
func (a Framework) ManifestsWithConfig(cluster *clusterv1.ManagedCluster, mca *addonv1alpha1.ManagedClusterAddOn, cfg *addonv1alpha1.AddOnDeploymentConfigSpec) ([]runtime.Object, error) {
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "create"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"get", "list", "watch", "create", "patch"}},
		{APIGroups: []string{policyv1.GroupName}, Resources: []string{"*"}, Verbs: []string{"*"}},
		// The copy of the cluster's encryption key (hub templates' protect).
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{hubtemplate.KeySecret}, Verbs: []string{"get", "update"}},
		// Gatekeeper ConstraintTemplates and constraints a policy carries.
		{APIGroups: []string{gatekeeper.TemplateGroup, gatekeeper.ConstraintGroup}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch"}},
	}
	return agentManifests(FrameworkName, a.Image, cluster, mca, cfg, []string{"policies"}, rules, "")
}

// Manifests implements framework.Addon: the ConfigurationPolicy CRD, the
// agent's ServiceAccount (bound to cluster-admin: an enforced policy may
// create any object, as with OCM's controller) and its Deployment.
func (a ConfigPolicy) Manifests(cluster *clusterv1.ManagedCluster, mca *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
	return a.ManifestsWithConfig(cluster, mca, nil)
}

// ManifestsWithConfig implements framework.Configurable: cfg's registries and
// node placement shape the agent's Deployment.
func (a ConfigPolicy) ManifestsWithConfig(cluster *clusterv1.ManagedCluster, mca *addonv1alpha1.ManagedClusterAddOn, cfg *addonv1alpha1.AddOnDeploymentConfigSpec) ([]runtime.Object, error) {
	return agentManifests(ConfigPolicyName, a.Image, cluster, mca, cfg, ConfigPolicyCRDs, nil, "cluster-admin")
}

// ConfigPolicyCRDs are the kinds the config-policy-controller agent's
// engines evaluate, whose CRDs its manifests carry (by plural).
var ConfigPolicyCRDs = []string{"configurationpolicies", "certificatepolicies", "operatorpolicies"}

func agentManifests(addon, img string, cluster *clusterv1.ManagedCluster, mca *addonv1alpha1.ManagedClusterAddOn, cfg *addonv1alpha1.AddOnDeploymentConfigSpec, crdPlurals []string, rules []rbacv1.PolicyRule, clusterRole string) ([]runtime.Object, error) {
	ns := mca.Status.Namespace
	if ns == "" {
		ns = ocm.DefaultAddonInstallNamespace
	}
	if img == "" {
		img = DefaultImage
	}
	crds, err := manifests.CRDs(manifests.PolicyCRDs)
	if err != nil {
		return nil, err
	}
	agent := framework.AgentDeployment{Addon: addon, Namespace: ns, Image: img, Config: cfg,
		Args: []string{"addon-agent", addon, "--cluster-name", cluster.Name, "--namespace", ns}}
	name := agent.Name()
	var objs []runtime.Object
	for _, plural := range crdPlurals {
		for _, crd := range crds {
			if crd.Name == plural+"."+policyv1.GroupName {
				crd.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
				objs = append(objs, crd)
			}
		}
	}
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}
	cr := name
	if clusterRole != "" {
		cr = clusterRole
	} else {
		objs = append(objs, &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management:" + name}, Rules: rules})
		cr = "open-cluster-management:" + name
	}
	objs = append(objs,
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}},
		&rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management:" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr},
			Subjects:   []rbacv1.Subject{sa}},
		&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{ocm.AddonHubKubeconfigSecret(addon)}, Verbs: []string{"get"}},
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
			}},
		&rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{sa}},
		agent.Object(),
	)
	return objs, nil
}
