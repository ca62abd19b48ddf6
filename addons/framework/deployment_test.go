package framework

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

func TestOverrideImage(t *testing.T) {
	const img = "ghcr.io/flotilla-dev/flotilla:v1"
	for name, tc := range map[string]struct {
		regs []addonv1alpha1.ImageMirror
		want string
	}{
		"no registries":          {nil, img},
		"source prefix":          {[]addonv1alpha1.ImageMirror{{Source: "ghcr.io/flotilla-dev", Mirror: "registry.local:5000/ocm"}}, "registry.local:5000/ocm/flotilla:v1"},
		"whole image as source":  {[]addonv1alpha1.ImageMirror{{Source: img, Mirror: "mirror.example/f:v9"}}, "mirror.example/f:v9"},
		"other source":           {[]addonv1alpha1.ImageMirror{{Source: "quay.io/x", Mirror: "registry.local/y"}}, img},
		"no source: every image": {[]addonv1alpha1.ImageMirror{{Mirror: "registry.local/mirror/"}}, "registry.local/mirror/flotilla:v1"},
		"no mirror: ignored":     {[]addonv1alpha1.ImageMirror{{Source: "ghcr.io"}}, img},
		"later match wins": {[]addonv1alpha1.ImageMirror{{Source: "ghcr.io", Mirror: "a.example"}, {Source: "ghcr.io/flotilla-dev", Mirror: "b.example/ocm"}},
			"b.example/ocm/flotilla:v1"},
	} {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, OverrideImage(img, tc.regs)) })
	}
}

func TestAgentDeployment(t *testing.T) {
	a := AgentDeployment{Addon: "example", Namespace: "addons", Image: "ghcr.io/flotilla-dev/flotilla:v1", Args: []string{"addon-agent", "example"}}
	d := a.Object()
	assert.Equal(t, "example-agent", d.Name)
	assert.Equal(t, "addons", d.Namespace)
	pod := d.Spec.Template.Spec
	assert.Equal(t, "example-agent", pod.ServiceAccountName)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, "ghcr.io/flotilla-dev/flotilla:v1", c.Image)
	assert.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy, "an image imported into the node runs without a registry")
	assert.Equal(t, []string{"addon-agent", "example"}, c.Args)
	assert.True(t, *c.SecurityContext.RunAsNonRoot)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	require.Len(t, pod.Volumes, 1)
	sec := pod.Volumes[0].Secret
	require.NotNil(t, sec)
	assert.Equal(t, "example-hub-kubeconfig", sec.SecretName)
	assert.True(t, *sec.Optional, "the Pod starts before the klusterlet wrote the credential")
	assert.Equal(t, []corev1.VolumeMount{{Name: "hub-kubeconfig", MountPath: HubKubeconfigMountPath, ReadOnly: true}}, c.VolumeMounts)
	assert.Empty(t, pod.NodeSelector)

	a.Config = &addonv1alpha1.AddOnDeploymentConfigSpec{
		Registries:    []addonv1alpha1.ImageMirror{{Source: "ghcr.io/flotilla-dev", Mirror: "registry.local:5000/ocm"}},
		NodePlacement: &addonv1alpha1.NodePlacement{NodeSelector: map[string]string{"role": "infra"}, Tolerations: []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists}}},
	}
	pod = a.Object().Spec.Template.Spec
	assert.Equal(t, "registry.local:5000/ocm/flotilla:v1", pod.Containers[0].Image)
	assert.Equal(t, map[string]string{"role": "infra"}, pod.NodeSelector)
	assert.Len(t, pod.Tolerations, 1)
	assert.Empty(t, pod.Containers[0].Resources, "no resourceRequirements: none set")

	a.Config.ResourceRequirements = []addonv1alpha1.ContainerResourceRequirements{
		{ContainerID: "deployments:*:*", Resources: cpu("50m")},
		{ContainerID: "deployments:other-agent:*", Resources: cpu("1")},
	}
	pod = a.Object().Spec.Template.Spec
	q := pod.Containers[0].Resources.Requests[corev1.ResourceCPU]
	assert.Equal(t, "50m", q.String(), "deployments:*:* matches example-agent's container; other-agent's does not")
}
