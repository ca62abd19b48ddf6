// Package search delivers the fleet search agent as the addon "search":
// its registration only (name, manifests, hub rights, health). The agent
// is search/agent; the hub's index and API are search/index and
// search/apigroup.
//
// The agent's hub credential may create syncs.search.flotilla.dev in its
// cluster's namespace and nothing else; the search API accepts a write for
// a cluster only from that cluster's agent. On the managed cluster the agent
// may get, list and watch the resources it searches, cluster-wide, and
// nothing else (Secrets are listed as metadata; RBAC cannot grant metadata
// alone, the agent asks for nothing more).
package search

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/addons/framework"
	searchv1alpha1 "flotilla.dev/flotilla/api/search/v1alpha1"
	"flotilla.dev/flotilla/internal/image"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/search/agent"
)

const (
	// Name is the addon's name.
	Name = ocm.SearchAddon
	// ResourcesVariable is the AddOnDeploymentConfig customizedVariable
	// that sets the resources searched: a comma-separated list of kubectl
	// resource names ("pods,deployments.apps,widgets.v1.example.com").
	// Default agent.DefaultResources.
	ResourcesVariable = "SEARCH_RESOURCES"
	// DefaultImage runs the agent when no image is set.
	DefaultImage = image.DefaultRegistry + "/" + image.Repository + ":latest"
)

// HubRules are the agent's hub rights, in its cluster namespace only.
var HubRules = []rbacv1.PolicyRule{
	{APIGroups: []string{searchv1alpha1.GroupName}, Resources: []string{"syncs"}, Verbs: []string{"create"}},
}

// Addon is the search addon.
type Addon struct {
	// Image of the agent Deployment, before an AddOnDeploymentConfig's
	// registries apply. Default DefaultImage.
	Image string
}

var (
	_ framework.Addon        = Addon{}
	_ framework.Configurable = Addon{}
)

// Name implements framework.Addon.
func (Addon) Name() string { return Name }

// Options implements framework.Addon.
func (Addon) Options() framework.Options {
	return framework.Options{
		DisplayName:  "Fleet search",
		Description:  "Indexes the cluster's workload, network, configuration and RBAC objects on the hub for search (Secrets as metadata only)",
		Registration: &framework.Registration{Permissions: HubRules},
		Health:       framework.Health{Mode: framework.HealthLease},
	}
}

// Manifests implements framework.Addon.
func (a Addon) Manifests(cluster *clusterv1.ManagedCluster, mca *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
	return a.ManifestsWithConfig(cluster, mca, nil)
}

// resourceName is a kubectl resource name: resource[.version][.group].
var resourceName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// Resources reads the resources searched from cfg's ResourcesVariable.
func Resources(cfg *addonv1alpha1.AddOnDeploymentConfigSpec) ([]string, error) {
	if cfg == nil {
		return agent.DefaultResources, nil
	}
	for _, v := range cfg.CustomizedVariables {
		if v.Name != ResourcesVariable {
			continue
		}
		var out []string
		for _, r := range strings.Split(v.Value, ",") {
			r = strings.TrimSpace(r)
			if r == "" {
				continue
			}
			if !resourceName.MatchString(r) || len(r) > 253 {
				return nil, fmt.Errorf("customizedVariable %s: %q is not a resource name (pods, deployments.apps, widgets.v1.example.com)", ResourcesVariable, r)
			}
			out = append(out, r)
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("customizedVariable %s names no resource", ResourcesVariable)
		}
		return out, nil
	}
	return agent.DefaultResources, nil
}

var version = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// groupResource reads resource[.version][.group]: a second part that looks
// like a version (v1, v1beta2) is one.
func groupResource(name string) schema.GroupResource {
	parts := strings.Split(name, ".")
	switch {
	case len(parts) == 1:
		return schema.GroupResource{Resource: name}
	case len(parts) >= 3 && version.MatchString(parts[1]):
		return schema.GroupResource{Resource: parts[0], Group: strings.Join(parts[2:], ".")}
	case len(parts) == 2 && version.MatchString(parts[1]): // resource.version: core
		return schema.GroupResource{Resource: parts[0]}
	}
	return schema.GroupResource{Resource: parts[0], Group: strings.Join(parts[1:], ".")}
}

// readRules are get, list and watch on each resource (its group and name
// as the name gives them; a version in the name is dropped).
func readRules(resources []string) []rbacv1.PolicyRule {
	byGroup := map[string][]string{}
	var groups []string
	for _, r := range resources {
		gr := groupResource(r)
		if _, ok := byGroup[gr.Group]; !ok {
			groups = append(groups, gr.Group)
		}
		byGroup[gr.Group] = append(byGroup[gr.Group], gr.Resource)
	}
	var rules []rbacv1.PolicyRule
	for _, g := range groups {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: byGroup[g], Verbs: []string{"get", "list", "watch"}})
	}
	return rules
}

// ManifestsWithConfig implements framework.Configurable: cfg's registries,
// node placement and resources shape the agent, and ResourcesVariable what
// it searches.
func (a Addon) ManifestsWithConfig(cluster *clusterv1.ManagedCluster, mca *addonv1alpha1.ManagedClusterAddOn, cfg *addonv1alpha1.AddOnDeploymentConfigSpec) ([]runtime.Object, error) {
	resources, err := Resources(cfg)
	if err != nil {
		return nil, err
	}
	ns := mca.Status.Namespace
	if ns == "" {
		ns = ocm.DefaultAddonInstallNamespace
	}
	img := a.Image
	if img == "" {
		img = DefaultImage
	}
	// The image's slim agent binary: a third of flotilla's memory.
	d := framework.AgentDeployment{Addon: Name, Namespace: ns, Image: img, Config: cfg, Command: []string{"/" + image.SearchAgentBinary},
		Args: []string{"addon-agent", Name, "--cluster-name", cluster.Name, "--namespace", ns, "--resources", strings.Join(resources, ",")}}
	name := d.Name()
	role := "open-cluster-management:" + name
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}
	return []runtime.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}},
		&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: readRules(resources)},
		&rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: []rbacv1.Subject{sa}},
		&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{ocm.AddonHubKubeconfigSecret(Name)}, Verbs: []string{"get"}},
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
			}},
		&rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: []rbacv1.Subject{sa}},
		d.Object(),
	}, nil
}
