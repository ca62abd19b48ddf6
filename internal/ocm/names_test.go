package ocm

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReservedName(t *testing.T) {
	for name, reserved := range map[string]bool{
		"default": true, "managed-clusters": true, "kube-system": true, "kube-public": true, "kube-node-lease": true,
		"open-cluster-management": true, "open-cluster-management-hub": true, "open-cluster-management-agent": true,
		"flotilla-system": true,
		"cluster1":        false, "prod-eu": false, "kube": false, "defaults": false, "my-flotilla": false, "managed-clusters2": false,
	} {
		assert.Equal(t, reserved, ReservedName(name) != "", name)
	}
}

func TestAddonNames(t *testing.T) {
	assert.Equal(t, "system:open-cluster-management:cluster:c1:addon:a:agent:a-agent", AddonAgentUser("c1", "a", "a-agent"))
	assert.Equal(t, "system:open-cluster-management:cluster:c1:addon:a", AddonClusterGroup("c1", "a"))
	assert.Equal(t, "system:open-cluster-management:addon:a", AddonGroupName("a"))
	assert.Equal(t, "a-hub-kubeconfig", AddonHubKubeconfigSecret("a"))
	assert.Equal(t, "addon-a-deploy-0", AddonDeployWorkName("a", 0))
	assert.Equal(t, "addon-a-pre-delete", AddonPreDeleteWorkName("a"))
	assert.Equal(t, "governance-policy-framework", PolicyFrameworkAddon, "OCM's name")
	assert.Equal(t, "config-policy-controller", ConfigPolicyAddon, "OCM's name")
}
