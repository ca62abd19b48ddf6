// Package template turns an AddOnTemplate (addon.open-cluster-management.io/v1alpha1)
// into a framework.Addon, so an addon is defined in YAML with no Go code: its
// agentSpec's manifests (with placeholders filled per cluster), its
// registration (KubeClient: hubPermissions become RoleBindings in one
// namespace each; CustomSigner: the hub signs with its addon CA), and
// its health: the Deployments it delivers must be available (through status
// feedback), or, without a Deployment, its manifests must be applied.
//
// Placeholders, in any string of a manifest: {{CLUSTER_NAME}},
// {{INSTALL_NAMESPACE}}, {{HUB_KUBECONFIG}} (the path of the hub kubeconfig an
// agent mounting Secret <addon>-hub-kubeconfig at /managed/hub-kubeconfig
// sees), every customizedVariable of the AddOnDeploymentConfig that applies as
// {{NAME}}, and << ClusterName >> / << AddonInstallNamespace >>. A placeholder
// with no value is an error naming it and the manifest. A namespaced manifest
// without a namespace goes to the install namespace (the AddOnTemplate CRD
// refuses a placeholder in metadata.namespace). The AddOnDeploymentConfig's
// registries and node placement apply to the apps/v1 Deployments and
// DaemonSets delivered (their images and Pod nodeSelector/tolerations).
package template

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/addons/framework"
	hubcsr "flotilla.dev/flotilla/hub/registration/csr"
	"flotilla.dev/flotilla/internal/ocm"
)

// Resource is the config resource naming an AddOnTemplate.
var Resource = addonv1alpha1.ConfigGroupResource{Group: ocm.AddonGroup, Resource: "addontemplates"}

// HubKubeconfigPath is what {{HUB_KUBECONFIG}} becomes.
const HubKubeconfigPath = "/managed/hub-kubeconfig/kubeconfig"

// Addon is an addon defined by an AddOnTemplate.
type Addon struct {
	Template *addonv1alpha1.AddOnTemplate
}

var (
	_ framework.Addon        = Addon{}
	_ framework.Configurable = Addon{}
)

// Name implements framework.Addon.
func (a Addon) Name() string { return a.Template.Spec.AddonName }

// Options implements framework.Addon.
func (a Addon) Options() framework.Options {
	o := framework.Options{Health: framework.Health{Mode: framework.HealthNone}}
	if probe := deploymentProbe(a.Template.Spec.AgentSpec.Workload.Manifests); probe != nil {
		o.Health = framework.Health{Mode: framework.HealthWorkField, Probe: probe}
	}
	if a.checkRegistrations() != nil {
		return o // refused in Manifests, with the reason; nothing registers
	}
	for _, r := range a.Template.Spec.Registration {
		if r.Type == addonv1alpha1.RegistrationTypeCustomSigner {
			o.Registration = &framework.Registration{SignerName: r.CustomSigner.SignerName, Subject: r.CustomSigner.Subject.DeepCopy()}
			continue
		}
		if o.Registration == nil {
			o.Registration = &framework.Registration{}
		}
		if r.KubeClient == nil {
			continue
		}
		for _, p := range r.KubeClient.HubPermissions {
			switch {
			case p.Type == addonv1alpha1.HubPermissionsBindingCurrentCluster && p.CurrentCluster != nil:
				o.Registration.Bindings = append(o.Registration.Bindings, framework.RoleBinding{
					RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: p.CurrentCluster.ClusterRoleName}})
			case p.Type == addonv1alpha1.HubPermissionsBindingSingleNamespace && p.SingleNamespace != nil:
				o.Registration.Bindings = append(o.Registration.Bindings, framework.RoleBinding{
					Namespace: p.SingleNamespace.Namespace, RoleRef: p.SingleNamespace.RoleRef})
			}
		}
	}
	return o
}

// Manifests implements framework.Addon.
func (a Addon) Manifests(cluster *clusterv1.ManagedCluster, mca *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
	return a.ManifestsWithConfig(cluster, mca, nil)
}

var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_]+)\s*\}\}|<<\s*([A-Za-z0-9_]+)\s*>>`)

// ManifestsWithConfig implements framework.Configurable.
func (a Addon) ManifestsWithConfig(cluster *clusterv1.ManagedCluster, mca *addonv1alpha1.ManagedClusterAddOn, cfg *addonv1alpha1.AddOnDeploymentConfigSpec) ([]runtime.Object, error) {
	if err := a.checkRegistrations(); err != nil {
		return nil, err
	}
	ns := mca.Status.Namespace
	if ns == "" {
		ns = ocm.DefaultAddonInstallNamespace
	}
	values := map[string]string{"CLUSTER_NAME": cluster.Name, "INSTALL_NAMESPACE": ns, "HUB_KUBECONFIG": HubKubeconfigPath,
		"ClusterName": cluster.Name, "AddonInstallNamespace": ns}
	if cfg != nil {
		for _, v := range cfg.CustomizedVariables {
			values[v.Name] = v.Value
		}
	}
	var out []runtime.Object
	for i, m := range a.Template.Spec.AgentSpec.Workload.Manifests {
		var missing []string
		raw := placeholder.ReplaceAllStringFunc(string(m.Raw), func(s string) string {
			sub := placeholder.FindStringSubmatch(s)
			name := sub[1] + sub[2]
			v, ok := values[name]
			if !ok {
				missing = append(missing, name)
				return s
			}
			// JSON-escape inside the string it stands in: drop exactly the
			// quotes Marshal adds (Trim would also eat an escaped quote at
			// either end, leaving a backslash that escapes the template's
			// closing quote).
			b, _ := json.Marshal(v)
			return string(b[1 : len(b)-1])
		})
		if len(missing) > 0 {
			return nil, fmt.Errorf("AddOnTemplate %s manifest %d: no value for %s (set it as a customizedVariable of an AddOnDeploymentConfig)", a.Template.Name, i, strings.Join(missing, ", "))
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(raw)); err != nil {
			return nil, fmt.Errorf("AddOnTemplate %s manifest %d: %w", a.Template.Name, i, err)
		}
		if u.GetNamespace() == "" && !clusterScoped[u.GetKind()] {
			u.SetNamespace(ns)
		}
		if err := applyDeploymentConfig(u, cfg); err != nil {
			return nil, fmt.Errorf("AddOnTemplate %s manifest %d: %w", a.Template.Name, i, err)
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, errors.New("AddOnTemplate " + a.Template.Name + " has no manifests in agentSpec.workload")
	}
	return out, nil
}

// clusterScoped are the kinds that get no install namespace.
var clusterScoped = map[string]bool{"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true,
	"PriorityClass": true, "StorageClass": true, "PersistentVolume": true, "ValidatingWebhookConfiguration": true,
	"MutatingWebhookConfiguration": true, "APIService": true, "ClusterClaim": true}

// deploymentProbe asks for the availability of each Deployment the template
// delivers (nil when it delivers none).
func deploymentProbe(ms []workv1.Manifest) *framework.Probe {
	var fields []framework.ProbeField
	for _, m := range ms {
		var meta struct {
			APIVersion, Kind string
			Metadata         struct{ Name, Namespace string }
		}
		if json.Unmarshal(m.Raw, &meta) != nil || meta.Kind != "Deployment" || meta.APIVersion != "apps/v1" || placeholder.MatchString(meta.Metadata.Name+meta.Metadata.Namespace) {
			continue
		}
		fields = append(fields, framework.ProbeField{
			Resource: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Name: meta.Metadata.Name, Namespace: meta.Metadata.Namespace},
			Rules:    []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}},
		})
	}
	if len(fields) == 0 {
		return nil
	}
	return &framework.Probe{Fields: fields, Check: func(results []framework.FieldResult) error {
		if len(results) < len(fields) {
			return fmt.Errorf("%d of %d Deployments report no status yet", len(fields)-len(results), len(fields))
		}
		for _, r := range results {
			ok := false
			for _, v := range r.Values {
				if v.Name == "AvailableReplicas" && v.Value.Integer != nil && *v.Value.Integer > 0 {
					ok = true
				}
			}
			if !ok {
				return fmt.Errorf("Deployment %s/%s has no available replica", r.Resource.Namespace, r.Resource.Name)
			}
		}
		return nil
	}}
}

// The CA that signs template addons' CustomSigner CSRs: the hub's addon CA
// (addons/approve keeps it), the only signingCA a template may name.
const (
	SigningCANamespace = ocm.HubNamespace
	SigningCASecret    = "addon-signer-ca"
)

// checkRegistrations says what is wrong with the template's registrations:
// KubeClient ones (any number: their hubPermissions add up), or one
// CustomSigner registration alone, with a custom signer name and, as
// signingCA, the hub's addon CA.
func (a Addon) checkRegistrations() error {
	regs := a.Template.Spec.Registration
	for i, r := range regs {
		where := fmt.Sprintf("AddOnTemplate %s registration %d", a.Template.Name, i)
		switch r.Type {
		case addonv1alpha1.RegistrationTypeKubeClient:
		case addonv1alpha1.RegistrationTypeCustomSigner:
			c := r.CustomSigner
			switch {
			case len(regs) > 1:
				return fmt.Errorf("%s: a CustomSigner registration must be the template's only one (this hub gives an addon agent one credential)", where)
			case c == nil:
				return fmt.Errorf("%s: type CustomSigner needs customSigner", where)
			case !hubcsr.IsCustomSigner(c.SignerName):
				return fmt.Errorf("%s: signerName %q is not a custom signer (<domain>/<path>, outside kubernetes.io)", where, c.SignerName)
			case c.SigningCA.Name != SigningCASecret || (c.SigningCA.Namespace != "" && c.SigningCA.Namespace != SigningCANamespace):
				return fmt.Errorf("%s: signingCA %s/%s: this hub signs CustomSigner certificates only with its addon CA, Secret %s/%s (an admin may put their own CA there)",
					where, c.SigningCA.Namespace, c.SigningCA.Name, SigningCANamespace, SigningCASecret)
			}
		default:
			return fmt.Errorf("%s has type %q; KubeClient or CustomSigner", where, r.Type)
		}
	}
	return nil
}
