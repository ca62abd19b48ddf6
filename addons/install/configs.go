package install

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/internal/ocm"
)

// The config types this hub's addon manager reads.
var (
	DeploymentConfigs = addonv1alpha1.ConfigGroupResource{Group: ocm.AddonGroup, Resource: "addondeploymentconfigs"}
	Templates         = addonv1alpha1.ConfigGroupResource{Group: ocm.AddonGroup, Resource: "addontemplates"}
)

type resolved struct {
	ref     addonv1alpha1.ConfigReference
	problem *ConfigProblem
}

// resolver reads configs for one reconcile, each once.
type resolver struct {
	ctx  context.Context
	c    client.Reader
	cma  *addonv1alpha1.ClusterManagementAddOn
	seen map[string]resolved
}

func (r *resolver) resolve(c addonv1alpha1.AddOnConfig, cluster string) (addonv1alpha1.ConfigReference, *ConfigProblem) {
	ref := c.ConfigReferent
	if ref.Namespace == "" && c.ConfigGroupResource == DeploymentConfigs {
		ref.Namespace = cluster // "" at the ClusterManagementAddOn level: no hash to show
	}
	out := addonv1alpha1.ConfigReference{ConfigGroupResource: c.ConfigGroupResource, ConfigReferent: ref,
		DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: ref}}
	key := framework.ConfigKey(c.ConfigGroupResource, ref)
	if res, ok := r.seen[key]; ok {
		return res.ref, res.problem
	}
	problem := r.read(&out)
	r.seen[key] = resolved{ref: out, problem: problem}
	return out, problem
}

// read fills ref's spec hash and generation from the config it names.
func (r *resolver) read(ref *addonv1alpha1.ConfigReference) *ConfigProblem {
	what := fmt.Sprintf("%s.%s %s", ref.Resource, ref.Group, ref.Name)
	supported := false
	var names []string
	for _, sc := range r.cma.Spec.SupportedConfigs {
		supported = supported || sc.ConfigGroupResource == ref.ConfigGroupResource
		names = append(names, sc.Resource)
	}
	switch {
	case ref.Name == "":
		return &ConfigProblem{Reason: ReasonConfigUnsupported, Message: fmt.Sprintf("a config of type %s.%s names no object", ref.Resource, ref.Group)}
	case !supported:
		return &ConfigProblem{Reason: ReasonConfigUnsupported, Message: fmt.Sprintf("config %s is of a type ClusterManagementAddOn %s does not support (supportedConfigs: %s)",
			what, r.cma.Name, strings.Join(names, ", "))}
	}
	var obj client.Object
	switch ref.ConfigGroupResource {
	case DeploymentConfigs:
		if ref.Namespace == "" {
			return nil // named without a namespace: each cluster reads its own
		}
		what = fmt.Sprintf("AddOnDeploymentConfig %s/%s", ref.Namespace, ref.Name)
		obj = &addonv1alpha1.AddOnDeploymentConfig{}
	case Templates:
		what = "AddOnTemplate " + ref.Name
		obj = &addonv1alpha1.AddOnTemplate{}
	default:
		return &ConfigProblem{Reason: ReasonConfigUnsupported, Message: fmt.Sprintf("config %s is of a type this hub's addon manager does not read (addondeploymentconfigs and addontemplates only)", what)}
	}
	if err := r.c.Get(r.ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return &ConfigProblem{Reason: ReasonConfigNotFound, Message: what + " does not exist: create it or remove the reference"}
		}
		return &ConfigProblem{Reason: ReasonConfigNotFound, Message: fmt.Sprintf("read %s: %v", what, err)}
	}
	if t, ok := obj.(*addonv1alpha1.AddOnTemplate); ok && t.Spec.AddonName != r.cma.Name {
		return &ConfigProblem{Reason: ReasonConfigUnsupported, Message: fmt.Sprintf("%s is for addon %q, not %q", what, t.Spec.AddonName, r.cma.Name)}
	}
	h, err := framework.SpecHash(obj)
	if err != nil {
		return &ConfigProblem{Reason: ReasonConfigUnsupported, Message: fmt.Sprintf("%s: %v", what, err)}
	}
	ref.DesiredConfig.SpecHash = h
	ref.LastObservedGeneration = obj.GetGeneration()
	return nil
}
