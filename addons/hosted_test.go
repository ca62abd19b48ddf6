package addons

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

func TestShippedAddonsAndTheirHostedAgents(t *testing.T) {
	reg := Shipped()
	assert.Equal(t, []string{"config-policy-controller", "example", "governance-policy-framework", "search"}, reg.Names())
	for _, name := range []string{"governance-policy-framework", "config-policy-controller"} {
		g, _ := reg.Get(name)
		args, ok := HostedAgentArgs(g, "cluster1")
		assert.True(t, ok)
		assert.Equal(t, []string{"addon-agent", name, "--cluster-name", "cluster1", "--namespace", "open-cluster-management-agent-addon"}, args)
		assert.Equal(t, addonv1alpha1.AddonInstallStrategyManual, ClusterManagementAddOn(g).Spec.InstallStrategy.Type)
	}
	s, _ := reg.Get("search")
	args, ok := HostedAgentArgs(s, "cluster1")
	assert.True(t, ok)
	assert.Equal(t, []string{"addon-agent", "search", "--cluster-name", "cluster1", "--namespace", "open-cluster-management-agent-addon", "--resources"}, args[:7])
	a, _ := reg.Get("example")
	args, ok = HostedAgentArgs(a, "cluster1")
	assert.True(t, ok)
	assert.Equal(t, []string{"addon-agent", "example", "--cluster-name", "cluster1", "--namespace", "open-cluster-management-agent-addon"}, args)

	// The hub's --addon-image reaches every shipped agent's Deployment.
	for _, name := range ShippedWith("registry.local:5000/ocm/flotilla:v1").Names() {
		a, _ := ShippedWith("registry.local:5000/ocm/flotilla:v1").Get(name)
		objs, err := a.Manifests(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}}, &addonv1alpha1.ManagedClusterAddOn{})
		require.NoError(t, err)
		images := 0
		for _, o := range objs {
			if d, ok := o.(*appsv1.Deployment); ok {
				assert.Equal(t, "registry.local:5000/ocm/flotilla:v1", d.Spec.Template.Spec.Containers[0].Image, name)
				images++
			}
		}
		assert.Equal(t, 1, images, name)
	}

	cma := ClusterManagementAddOn(a)
	assert.Equal(t, addonv1alpha1.AddonInstallStrategyManual, cma.Spec.InstallStrategy.Type)
	assert.Equal(t, "addon-manager", cma.Annotations["addon.open-cluster-management.io/lifecycle"])
}
