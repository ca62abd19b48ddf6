package addons

import (
	"testing"

	"github.com/stretchr/testify/assert"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

func TestShippedAddonsAndTheirHostedAgents(t *testing.T) {
	reg := Shipped()
	assert.Equal(t, []string{"config-policy-controller", "example", "governance-policy-framework"}, reg.Names())
	for _, name := range []string{"governance-policy-framework", "config-policy-controller"} {
		g, _ := reg.Get(name)
		args, ok := HostedAgentArgs(g, "cluster1")
		assert.True(t, ok)
		assert.Equal(t, []string{"addon-agent", name, "--cluster-name", "cluster1", "--namespace", "open-cluster-management-agent-addon"}, args)
		assert.Equal(t, addonv1alpha1.AddonInstallStrategyManual, ClusterManagementAddOn(g).Spec.InstallStrategy.Type)
	}
	a, _ := reg.Get("example")
	args, ok := HostedAgentArgs(a, "cluster1")
	assert.True(t, ok)
	assert.Equal(t, []string{"addon-agent", "example", "--cluster-name", "cluster1", "--namespace", "open-cluster-management-agent-addon"}, args)

	cma := ClusterManagementAddOn(a)
	assert.Equal(t, addonv1alpha1.AddonInstallStrategyManual, cma.Spec.InstallStrategy.Type)
	assert.Equal(t, "addon-manager", cma.Annotations["addon.open-cluster-management.io/lifecycle"])
}
