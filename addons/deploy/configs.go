package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/addons/install"
	"flotilla.dev/flotilla/addons/template"
)

// templates is the group/resource of AddOnTemplate.
var templates = template.Resource

// templateAddon returns the addon an AddOnTemplate defines for mca: the one
// its desired configs name (status.configReferences, set by addons/install),
// else the one its own configs or its ClusterManagementAddOn's defaults name.
// ok false: mca is no template addon. A named template that is missing is an
// error.
func (r *Reconciler) templateAddon(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) (framework.Addon, bool, error) {
	var cma addonv1alpha1.ClusterManagementAddOn
	if err := r.Get(ctx, types.NamespacedName{Name: mca.Name}, &cma); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	name := ""
	for _, c := range framework.DesiredConfigs(cma.Spec.SupportedConfigs, nil, mca.Spec.Configs) {
		if c.ConfigGroupResource == templates {
			name = c.Name
		}
	}
	for _, c := range mca.Status.ConfigReferences {
		if c.ConfigGroupResource == templates && c.DesiredConfig != nil {
			name = c.DesiredConfig.Name
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

// SpecHash is a short hash of a value's JSON (the rendered works' spec).
func SpecHash(spec any) string {
	raw, _ := json.Marshal(spec)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// resolved is what the desired configs of one ManagedClusterAddOn say.
type resolved struct {
	// pending: the manifests are not rendered now (the configs are not set
	// yet, or a config changed and this cluster's turn has not come); why.
	pending string
	// installNamespace from an AddOnDeploymentConfig ("" when none says).
	installNamespace string
	// hash of every desired spec hash: a change rolls the works out again.
	hash string
	// specHashes is OCM's work annotation value: config key -> spec hash.
	specHashes map[string]string
	// spec is the AddOnDeploymentConfig that applies, nil when none.
	spec *addonv1alpha1.AddOnDeploymentConfigSpec
}

// resolveConfigs reads the configs addons/install set as mca's desired ones
// (status.configReferences). Their content is used only while it still has
// the desired spec hash: a config changed since is rolled out by
// addons/install, cluster by cluster, and until this cluster's turn its works
// stay as they are (pending). A missing config is an error naming it.
func (r *Reconciler) resolveConfigs(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) (resolved, error) {
	out := resolved{specHashes: map[string]string{}}
	if !meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionConfigured) {
		out.pending = "waiting for the addon's configs to be set (condition Configured)"
		if c := meta.FindStatusCondition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionConfigured); c != nil {
			out.pending += ": " + c.Message
		}
	}
	var all []string
	for _, ref := range mca.Status.ConfigReferences {
		d := ref.DesiredConfig
		if d == nil {
			continue
		}
		var obj client.Object
		what := ""
		switch ref.ConfigGroupResource {
		case install.DeploymentConfigs:
			obj, what = &addonv1alpha1.AddOnDeploymentConfig{}, fmt.Sprintf("AddOnDeploymentConfig %s/%s", d.Namespace, d.Name)
		case install.Templates:
			obj, what = &addonv1alpha1.AddOnTemplate{}, "AddOnTemplate "+d.Name
		default:
			return out, fmt.Errorf("config %s.%s %s is of a type this hub's addon manager does not read", ref.Resource, ref.Group, d.Name)
		}
		if err := r.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return out, fmt.Errorf("%s named by the addon's configs does not exist: create it or remove the reference", what)
			}
			return out, fmt.Errorf("read %s: %w", what, err)
		}
		h, err := framework.SpecHash(obj)
		if err != nil {
			return out, fmt.Errorf("%s: %w", what, err)
		}
		if h != d.SpecHash && out.pending == "" {
			out.pending = what + " changed; this cluster gets the change when the rollout gives it its turn"
		}
		out.specHashes[framework.ConfigKey(ref.ConfigGroupResource, d.ConfigReferent)] = d.SpecHash
		all = append(all, d.SpecHash)
		if adc, ok := obj.(*addonv1alpha1.AddOnDeploymentConfig); ok {
			out.spec = adc.Spec.DeepCopy()
			if adc.Spec.AgentInstallNamespace != "" {
				out.installNamespace = adc.Spec.AgentInstallNamespace
			}
		}
	}
	if len(all) > 0 {
		out.hash = SpecHash(strings.Join(all, ","))[:16]
	}
	return out, nil
}

// configSpecHashAnnotation is OCM's annotation value on a deploy work: the
// JSON of config key -> spec hash.
func (c resolved) configSpecHashAnnotation() string {
	if len(c.specHashes) == 0 {
		return ""
	}
	raw, _ := json.Marshal(c.specHashes)
	return string(raw)
}
