package template

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

func TestDeploymentConfigShapesWorkloads(t *testing.T) {
	a := Addon{Template: tmpl(
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"agent"},"spec":{"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{`+
			`"nodeSelector":{"old":"x"},"initContainers":[{"name":"i","image":"quay.io/ocm/init:v1"}],"containers":[{"name":"c","image":"quay.io/ocm/agent:v1"},{"name":"s","image":"docker.io/library/busybox:1"}]}}}}`,
		`{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds"},"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"quay.io/ocm/ds:v1"}]}}}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"quay.io/ocm/pod:v1"}]}}`)}

	objs, err := a.Manifests(cluster, mca)
	require.NoError(t, err)
	image := func(i int, field string, j int) string {
		var path []string
		if objs[i].(*unstructured.Unstructured).GetKind() == "Pod" {
			path = []string{"spec", field}
		} else {
			path = []string{"spec", "template", "spec", field}
		}
		cs, _, _ := unstructured.NestedSlice(objs[i].(*unstructured.Unstructured).Object, path...)
		return cs[j].(map[string]any)["image"].(string)
	}
	assert.Equal(t, "quay.io/ocm/agent:v1", image(0, "containers", 0), "no config: as written")

	objs, err = a.ManifestsWithConfig(cluster, mca, &addonv1alpha1.AddOnDeploymentConfigSpec{
		Registries: []addonv1alpha1.ImageMirror{{Source: "quay.io/ocm", Mirror: "registry.local:5000/ocm"}},
		NodePlacement: &addonv1alpha1.NodePlacement{NodeSelector: map[string]string{"role": "infra"},
			Tolerations: []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}},
		ResourceRequirements: []addonv1alpha1.ContainerResourceRequirements{
			{ContainerID: "*:*:*", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}},
			{ContainerID: "deployments:agent:c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}},
		},
	})
	require.NoError(t, err)
	assert.Equal(t, "registry.local:5000/ocm/agent:v1", image(0, "containers", 0))
	assert.Equal(t, "docker.io/library/busybox:1", image(0, "containers", 1), "another registry is left alone")
	assert.Equal(t, "registry.local:5000/ocm/init:v1", image(0, "initContainers", 0))
	assert.Equal(t, "registry.local:5000/ocm/ds:v1", image(1, "containers", 0))
	assert.Equal(t, "quay.io/ocm/pod:v1", image(2, "containers", 0), "only Deployments and DaemonSets")
	resources := func(i int, field string, j int) any {
		cs, _, _ := unstructured.NestedSlice(objs[i].(*unstructured.Unstructured).Object, "spec", "template", "spec", field)
		return cs[j].(map[string]any)["resources"]
	}
	assert.Equal(t, map[string]any{"requests": map[string]any{"cpu": "100m"}}, resources(0, "containers", 0), "the last match wins")
	assert.Equal(t, map[string]any{"limits": map[string]any{"memory": "128Mi"}}, resources(0, "containers", 1), "*:*:*")
	assert.Equal(t, map[string]any{"limits": map[string]any{"memory": "128Mi"}}, resources(0, "initContainers", 0))
	assert.Equal(t, map[string]any{"limits": map[string]any{"memory": "128Mi"}}, resources(1, "containers", 0), "DaemonSets too")
	for i := range 2 {
		u := objs[i].(*unstructured.Unstructured)
		sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "spec", "nodeSelector")
		assert.Equal(t, map[string]string{"role": "infra"}, sel, u.GetKind())
		tol, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "tolerations")
		assert.Equal(t, []any{map[string]any{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}}, tol, u.GetKind())
	}
}
