package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/addons/template"
	"flotilla.dev/flotilla/internal/ocm"
)

// deploymentConfigs is the group/resource of AddOnDeploymentConfig.
var deploymentConfigs = addonv1alpha1.ConfigGroupResource{Group: ocm.AddonGroup, Resource: "addondeploymentconfigs"}

// templates is the group/resource of AddOnTemplate.
var templates = template.Resource

// templateAddon returns the addon an AddOnTemplate defines for mca: the one its
// own configs name, else its ClusterManagementAddOn's default. ok false: mca
// is no template addon. A named template that is missing is an error.
func (r *Reconciler) templateAddon(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) (framework.Addon, bool, error) {
	var cma addonv1alpha1.ClusterManagementAddOn
	if err := r.Get(ctx, types.NamespacedName{Name: mca.Name}, &cma); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	name := ""
	for _, c := range WantedConfigs(mca, &cma) {
		if c.ConfigGroupResource == templates {
			name = c.Name
		}
	}
	if name == "" {
		return nil, false, nil
	}
	var t addonv1alpha1.AddOnTemplate
	if err := r.Get(ctx, types.NamespacedName{Name: name}, &t); err != nil {
		return nil, true, fmt.Errorf("AddOnTemplate %s named by addon %s: %w", name, mca.Name, err)
	}
	if t.Spec.AddonName != mca.Name {
		return nil, true, fmt.Errorf("AddOnTemplate %s is for addon %q, not %q", name, t.Spec.AddonName, mca.Name)
	}
	return template.Addon{Template: &t}, true, nil
}

// SpecHash is the hash OCM shows in configReferences: sha256 of the spec's JSON.
func SpecHash(spec any) string {
	raw, _ := json.Marshal(spec)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// WantedConfigs are the configs that apply to mca: its own spec.configs, and for
// each supported type it names none of, the ClusterManagementAddOn's default.
func WantedConfigs(mca *addonv1alpha1.ManagedClusterAddOn, cma *addonv1alpha1.ClusterManagementAddOn) []addonv1alpha1.AddOnConfig {
	out := append([]addonv1alpha1.AddOnConfig(nil), mca.Spec.Configs...)
	if cma == nil {
		return out
	}
	for _, sc := range cma.Spec.SupportedConfigs {
		if sc.DefaultConfig == nil {
			continue
		}
		named := false
		for _, c := range mca.Spec.Configs {
			named = named || c.ConfigGroupResource == sc.ConfigGroupResource
		}
		if !named {
			out = append(out, addonv1alpha1.AddOnConfig{ConfigGroupResource: sc.ConfigGroupResource, ConfigReferent: *sc.DefaultConfig})
		}
	}
	return out
}

// resolved is what the configs of one ManagedClusterAddOn say.
type resolved struct {
	refs []addonv1alpha1.ConfigReference
	// installNamespace from an AddOnDeploymentConfig ("" when none says).
	installNamespace string
	// hash of every config's spec hash: a change rolls the works out again.
	hash string
	// spec is the AddOnDeploymentConfig that applies (the last one named), nil when none.
	spec *addonv1alpha1.AddOnDeploymentConfigSpec
}

// resolveConfigs reads each wanted config. A missing one is an error naming it;
// unsupported types are an error too (Flotilla's manager reads
// AddOnDeploymentConfig only).
func (r *Reconciler) resolveConfigs(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, cma *addonv1alpha1.ClusterManagementAddOn) (resolved, error) {
	var out resolved
	all := ""
	for _, c := range WantedConfigs(mca, cma) {
		if c.ConfigGroupResource == templates {
			continue // names the addon's template: read by the template lookup
		}
		if c.ConfigGroupResource != deploymentConfigs {
			return out, fmt.Errorf("config %s.%s %s is of a type this hub's addon manager does not read (only addondeploymentconfigs)", c.Resource, c.Group, c.Name)
		}
		ns := c.Namespace
		if ns == "" {
			ns = mca.Namespace
		}
		var adc addonv1alpha1.AddOnDeploymentConfig
		if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: c.Name}, &adc); err != nil {
			if apierrors.IsNotFound(err) {
				return out, fmt.Errorf("AddOnDeploymentConfig %s/%s named by the addon's configs does not exist: create it or remove the reference", ns, c.Name)
			}
			return out, fmt.Errorf("read AddOnDeploymentConfig %s/%s: %w", ns, c.Name, err)
		}
		h := SpecHash(adc.Spec)
		out.spec = adc.Spec.DeepCopy()
		all += h
		if adc.Spec.AgentInstallNamespace != "" {
			out.installNamespace = adc.Spec.AgentInstallNamespace
		}
		ref := addonv1alpha1.ConfigReferent{Namespace: ns, Name: c.Name}
		out.refs = append(out.refs, addonv1alpha1.ConfigReference{
			ConfigGroupResource: c.ConfigGroupResource, ConfigReferent: ref, LastObservedGeneration: adc.Generation,
			DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: ref, SpecHash: h},
		})
	}
	if all != "" {
		out.hash = SpecHash(all)[:16]
	}
	return out, nil
}
