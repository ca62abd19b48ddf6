package search

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/search/agent"
)

func TestResources(t *testing.T) {
	got, err := Resources(nil)
	require.NoError(t, err)
	assert.Equal(t, agent.DefaultResources, got)
	cfg := &addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: ResourcesVariable, Value: " pods, widgets.v1.example.com ,"}}}
	got, err = Resources(cfg)
	require.NoError(t, err)
	assert.Equal(t, []string{"pods", "widgets.v1.example.com"}, got)
	for _, bad := range []string{"Pods", "pods;rm", ",", "a b"} {
		_, err := Resources(&addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: ResourcesVariable, Value: bad}}})
		assert.ErrorContains(t, err, ResourcesVariable, bad)
	}
}

func TestReadRules(t *testing.T) {
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "secrets", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get", "list", "watch"}},
	}, readRules([]string{"pods", "secrets.v1", "deployments.apps", "ingresses.networking.k8s.io", "widgets.v1.example.com", "configmaps"}))
}

func TestManifests(t *testing.T) {
	objs, err := Addon{}.Manifests(&clusterv1.ManagedCluster{}, &addonv1alpha1.ManagedClusterAddOn{})
	require.NoError(t, err)
	var d *appsv1.Deployment
	for _, o := range objs {
		if x, ok := o.(*appsv1.Deployment); ok {
			d = x
		}
		if r, ok := o.(*rbacv1.ClusterRole); ok {
			for _, rule := range r.Rules {
				assert.Equal(t, []string{"get", "list", "watch"}, rule.Verbs, "the agent only reads its cluster")
			}
		}
	}
	require.NotNil(t, d)
	assert.Contains(t, d.Spec.Template.Spec.Containers[0].Args, "--resources")
}
