package template

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"flotilla.dev/flotilla/addons/framework"
)

// podTemplateKinds are the apps/v1 kinds whose Pod template an
// AddOnDeploymentConfig shapes.
var podTemplateKinds = map[string]bool{"Deployment": true, "DaemonSet": true}

// applyDeploymentConfig applies cfg's registries (framework.OverrideImage, to
// every container and init container), resource requirements
// (framework.ResourcesFor, per container) and node placement (nodeSelector and
// tolerations, replacing the template's) to u when it is an apps/v1
// Deployment or DaemonSet. Other objects are left alone.
func applyDeploymentConfig(u *unstructured.Unstructured, cfg *addonv1alpha1.AddOnDeploymentConfigSpec) error {
	if cfg == nil || u.GetAPIVersion() != "apps/v1" || !podTemplateKinds[u.GetKind()] {
		return nil
	}
	spec, ok, err := unstructured.NestedMap(u.Object, "spec", "template", "spec")
	if err != nil || !ok {
		return err // no Pod template: the apiserver says what is wrong
	}
	if len(cfg.ResourceRequirements) > 0 {
		if err := applyResources(u, spec, cfg.ResourceRequirements); err != nil {
			return err
		}
	}
	if len(cfg.Registries) > 0 {
		for _, field := range []string{"containers", "initContainers"} {
			cs, _, err := unstructured.NestedSlice(spec, field)
			if err != nil {
				return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
			}
			for _, c := range cs {
				if m, ok := c.(map[string]any); ok {
					if img, ok := m["image"].(string); ok {
						m["image"] = framework.OverrideImage(img, cfg.Registries)
					}
				}
			}
			if cs != nil {
				spec[field] = cs
			}
		}
	}
	if p := cfg.NodePlacement; p != nil {
		placement, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			return err
		}
		for _, field := range []string{"nodeSelector", "tolerations"} {
			if v, ok := placement[field]; ok {
				spec[field] = v
			} else {
				delete(spec, field)
			}
		}
	}
	return unstructured.SetNestedMap(u.Object, spec, "spec", "template", "spec")
}

// applyResources sets the resources of each container of spec (u's Pod
// template) that a containerID matches.
func applyResources(u *unstructured.Unstructured, spec map[string]any, reqs []addonv1alpha1.ContainerResourceRequirements) error {
	for _, field := range []string{"containers", "initContainers"} {
		cs, _, err := unstructured.NestedSlice(spec, field)
		if err != nil {
			return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
		for _, c := range cs {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			name, _ := m["name"].(string)
			r, ok := framework.ResourcesFor(u.GetKind(), u.GetName(), name, reqs)
			if !ok {
				continue
			}
			res, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&r)
			if err != nil {
				return err
			}
			m["resources"] = res
		}
		if cs != nil {
			spec[field] = cs
		}
	}
	return nil
}
