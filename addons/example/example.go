// Package example is the addon Flotilla ships to show the framework end to end.
//
// Its agent (`flotilla addon-agent example`) renews the Lease "example" in its
// install namespace on the managed cluster, and, with its own hub credential
// (Secret example-hub-kubeconfig), copies the ConfigMaps labelled
// addon.flotilla.dev/example=true from its cluster's namespace on the hub into
// its install namespace on the managed cluster, and removes copies whose
// original is gone. Its hub rights: read ConfigMaps in its cluster namespace,
// nothing else.
package example

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/internal/image"
	"flotilla.dev/flotilla/internal/ocm"
)

// Name is the example addon's name.
const Name = "example"

// CopyLabel marks hub ConfigMaps the agent copies to its cluster.
const CopyLabel = "addon.flotilla.dev/example"

// DefaultImage runs the agent when delivered as a Deployment and no image is
// set (the hub sets its --addon-image).
const DefaultImage = image.DefaultRegistry + "/" + image.Repository + ":latest"

// Addon is the example addon.
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
		DisplayName: "Flotilla example addon",
		Description: "Copies ConfigMaps labelled " + CopyLabel + "=true from the cluster's namespace on the hub to the managed cluster",
		Registration: &framework.Registration{Permissions: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
		}},
		Health: framework.Health{Mode: framework.HealthLease},
	}
}

// Manifests implements framework.Addon: the install namespace, the agent's
// ServiceAccount and rights on the managed cluster, and its Deployment.
func (a Addon) Manifests(cluster *clusterv1.ManagedCluster, mca *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
	return a.ManifestsWithConfig(cluster, mca, nil)
}

// ManifestsWithConfig implements framework.Configurable: cfg's registries and
// node placement shape the agent's Deployment.
func (a Addon) ManifestsWithConfig(cluster *clusterv1.ManagedCluster, mca *addonv1alpha1.ManagedClusterAddOn, cfg *addonv1alpha1.AddOnDeploymentConfigSpec) ([]runtime.Object, error) {
	ns := mca.Status.Namespace
	if ns == "" {
		ns = ocm.DefaultAddonInstallNamespace
	}
	img := a.Image
	if img == "" {
		img = DefaultImage
	}
	agent := framework.AgentDeployment{Addon: Name, Namespace: ns, Image: img, Config: cfg,
		Args: []string{"addon-agent", Name, "--cluster-name", cluster.Name, "--namespace", ns}}
	name := agent.Name()
	return []runtime.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}},
		&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
				{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{ocm.AddonHubKubeconfigSecret(Name)}, Verbs: []string{"get"}},
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
			}},
		&rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}},
		agent.Object(),
	}, nil
}
