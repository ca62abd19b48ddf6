package framework

import (
	"fmt"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Addon is one addon the hub manages: a small value, as upstream
// addon-framework's AgentAddon.
type Addon interface {
	// Name is the addon's name: its ClusterManagementAddOn's and every one of its
	// ManagedClusterAddOns'. A DNS label.
	Name() string
	// Manifests are the agent's objects for one cluster. addon.Status.Namespace
	// is the install namespace the objects should use. An error is reported on the
	// ManagedClusterAddOn (ManifestApplied False) and touches no other cluster.
	Manifests(cluster *clusterv1.ManagedCluster, addon *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error)
	// Options says how the agent registers, how the addon is installed and how
	// its health is read.
	Options() Options
}

// Options describes an addon beyond its manifests. Every field documents its default.
type Options struct {
	// DisplayName and Description go to the ClusterManagementAddOn the hub
	// creates for the addon. Default: the name, and nothing.
	DisplayName, Description string
	// Registration, when set, gives the agent a hub credential (a client
	// certificate in Secret <addon>-hub-kubeconfig in its install namespace) and
	// the hub rights it lists. Default nil: no credential.
	Registration *Registration
	// InstallStrategy is written to the ClusterManagementAddOn when the hub
	// creates it (an existing one keeps what an admin set). Default Manual.
	InstallStrategy *addonv1alpha1.InstallStrategy
	// Health says how the agent's health becomes the Available condition.
	// Default: HealthLease.
	Health Health
}

// Registration is how an addon's agent registers with the hub.
type Registration struct {
	// AgentName is the last part of the agent's user name
	// (system:open-cluster-management:cluster:<c>:addon:<a>:agent:<agent>).
	// Default "<addon>-agent".
	AgentName string
	// Permissions are the agent's rights on the hub, granted by a Role and
	// RoleBinding in the cluster's namespace only. A rule may not name a
	// cluster-scoped resource; the hub refuses an addon asking for one, with a
	// condition saying so. Default none (the agent may only authenticate).
	Permissions []rbacv1.PolicyRule
	// SignerName, when set to a signer other than
	// kubernetes.io/kube-apiserver-client (<domain>/<path>, outside
	// kubernetes.io), makes this OCM's CustomSigner registration: the hub signs
	// the agent's CSR with the CA it keeps for addons (Secret
	// open-cluster-management-hub/addon-signer-ca), and the certificate, which
	// is no hub identity, lands in the same Secret (tls.crt, tls.key, no
	// kubeconfig). Default: a KubeClient registration.
	SignerName string
	// Subject of a CustomSigner registration. Default: OCM's agent subject, as
	// for KubeClient.
	Subject *addonv1alpha1.Subject
	// Bindings grant existing Roles or ClusterRoles within one namespace each
	// (AddOnTemplate's hubPermissions). A namespace of another managed cluster,
	// or of the hub or Kubernetes itself, is refused. Default none.
	Bindings []RoleBinding
}

// HealthMode says how the hub learns whether an agent is available.
type HealthMode string

const (
	// HealthLease: the agent renews a Lease named after the addon in its install
	// namespace on the managed cluster; the klusterlet reports Available while it
	// is fresh and Unknown once it is stale.
	HealthLease HealthMode = "Lease"
	// HealthWorkField: Probe's fields of the deploy works' status feedback decide.
	HealthWorkField HealthMode = "WorkField"
	// HealthNone: the addon is Available as soon as its manifests are applied.
	HealthNone HealthMode = "None"
)

// Health says how an addon's availability is read.
type Health struct {
	// Mode: Lease (default), WorkField or None.
	Mode HealthMode
	// Probe is required for WorkField.
	Probe *Probe
}

// Probe reads status feedback from the addon's deploy works.
type Probe struct {
	// Fields are the objects and feedback rules to collect.
	Fields []ProbeField
	// Check returns nil when the collected values mean the agent is healthy, else
	// an error for people.
	Check func(results []FieldResult) error
}

// ProbeField asks for feedback values of one delivered object.
type ProbeField struct {
	Resource workv1.ResourceIdentifier
	Rules    []workv1.FeedbackRule
}

// FieldResult is the feedback collected for one ProbeField.
type FieldResult struct {
	Resource workv1.ResourceIdentifier
	Values   []workv1.FeedbackValue
}

// DefaultAgentName is the agent name of a registration that sets none.
func (r Registration) DefaultAgentName(addon string) string {
	if r.AgentName != "" {
		return r.AgentName
	}
	return addon + "-agent"
}

// Registry holds the addons a hub manages, by name. The zero value is not
// usable; make one with NewRegistry.
type Registry struct {
	addons map[string]Addon
}

// NewRegistry returns a registry holding addons (see Register).
func NewRegistry(addons ...Addon) (*Registry, error) {
	r := &Registry{addons: map[string]Addon{}}
	for _, a := range addons {
		if err := r.Register(a); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds a; a second addon with the same name, or an invalid one, is refused.
func (r *Registry) Register(a Addon) error {
	name := a.Name()
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("addon name %q is not a DNS label: %v", name, errs)
	}
	if _, dup := r.addons[name]; dup {
		return fmt.Errorf("addon %q is registered twice", name)
	}
	o := a.Options()
	if o.Health.Mode == HealthWorkField && (o.Health.Probe == nil || o.Health.Probe.Check == nil) {
		return fmt.Errorf("addon %q: health mode WorkField needs a Probe with a Check", name)
	}
	r.addons[name] = a
	return nil
}

// Get returns the addon named name.
func (r *Registry) Get(name string) (Addon, bool) {
	if r == nil {
		return nil, false
	}
	a, ok := r.addons[name]
	return a, ok
}

// Names lists the registered addons, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	out := make([]string, 0, len(r.addons))
	for n := range r.addons {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// HealthMode returns o's health mode, Lease when unset.
func (o Options) HealthMode() HealthMode {
	if o.Health.Mode == "" {
		return HealthLease
	}
	return o.Health.Mode
}

// Configurable is implemented by addons whose manifests read the
// AddOnDeploymentConfig that applies to a cluster (customized variables, node
// placement, registries, ...). The manager calls ManifestsWithConfig instead of
// Manifests for them; config is nil when no AddOnDeploymentConfig applies.
type Configurable interface {
	ManifestsWithConfig(cluster *clusterv1.ManagedCluster, addon *addonv1alpha1.ManagedClusterAddOn,
		config *addonv1alpha1.AddOnDeploymentConfigSpec) ([]runtime.Object, error)
}

// RoleBinding grants an agent a Role or ClusterRole that already exists on the
// hub, through a RoleBinding (so only within one namespace, never cluster-wide).
type RoleBinding struct {
	// Namespace of the RoleBinding. Default "": the cluster's namespace.
	Namespace string
	// RoleRef is the Role (in Namespace) or ClusterRole bound.
	RoleRef rbacv1.RoleRef
}
