package live

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"flotilla.dev/flotilla/policy/gatekeeper"
)

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// TemplatesGVR is the resource of ConstraintTemplates.
var TemplatesGVR = schema.GroupVersionResource{Group: gatekeeper.TemplateGroup, Version: "v1", Resource: "constrainttemplates"}

// crd builds a CustomResourceDefinition whose versions keep any field (as
// Gatekeeper's generated ones keep parameters), cluster-scoped, with a
// status subresource.
func crd(group, kind, plural string, versions []string, storage string, categories ...string) *unstructured.Unstructured {
	var vs []any
	for _, v := range versions {
		vs = append(vs, map[string]any{
			"name": v, "served": true, "storage": v == storage,
			"subresources": map[string]any{"status": map[string]any{}},
			"schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type": "object", "x-kubernetes-preserve-unknown-fields": true,
			}},
		})
	}
	names := map[string]any{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind)}
	if len(categories) > 0 {
		c := make([]any, len(categories))
		for i, s := range categories {
			c[i] = s
		}
		names["categories"] = c
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata": map[string]any{
			"name":   plural + "." + group,
			"labels": map[string]any{"app.kubernetes.io/managed-by": "flotilla-policy"},
		},
		"spec": map[string]any{"group": group, "scope": "Cluster", "names": names, "versions": vs},
	}}
}

// TemplateCRD is the ConstraintTemplate CRD Flotilla installs where
// Gatekeeper is absent: it keeps every field (no schema validation).
func TemplateCRD() *unstructured.Unstructured {
	return crd(gatekeeper.TemplateGroup, gatekeeper.TemplateKind, "constrainttemplates", []string{"v1", "v1beta1", "v1alpha1"}, "v1")
}

// ConstraintCRD is the CRD of a template's constraint kind.
func ConstraintCRD(kind string) *unstructured.Unstructured {
	return crd(gatekeeper.ConstraintGroup, kind, strings.ToLower(kind), []string{"v1beta1", "v1alpha1", "v1"}, "v1beta1", "constraint", "constraints")
}

// ensureCRD creates crd when missing (an existing one, Gatekeeper's
// included, is left as it is) and waits until it is established.
func ensureCRD(ctx context.Context, dyn dynamic.Interface, c *unstructured.Unstructured) error {
	api := dyn.Resource(crdsGVR)
	_, err := api.Create(ctx, c, metav1.CreateOptions{FieldManager: "flotilla-policy"})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create CRD %s: %w", c.GetName(), err)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := api.Get(ctx, c.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
}

// InstallTemplateCRD installs the ConstraintTemplate CRD unless one exists.
func InstallTemplateCRD(ctx context.Context, dyn dynamic.Interface) error {
	return ensureCRD(ctx, dyn, TemplateCRD())
}
