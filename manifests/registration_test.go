package manifests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenderKlusterlet(t *testing.T) {
	objs, err := Render(KlusterletManifests, map[string]string{"Namespace": "agent-ns", "ClusterName": "c1", "Image": "flotilla:test"})
	require.NoError(t, err)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetKind() != "Namespace" && o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" {
			assert.Equal(t, "agent-ns", o.GetNamespace(), o.GetName())
		}
	}
	assert.Equal(t, map[string]int{"Namespace": 1, "ServiceAccount": 1, "Role": 1, "RoleBinding": 1, "ClusterRole": 1, "ClusterRoleBinding": 2, "Deployment": 1}, kinds)

	_, err = Render(KlusterletManifests, map[string]string{"Namespace": "agent-ns"})
	assert.ErrorContains(t, err, "map has no entry", "a missing value is an error")
}

func TestRenderHub(t *testing.T) {
	objs, err := Render(HubManifests, map[string]any{"Image": "flotilla:test", "AddonImage": "flotilla:test", "AddonSigners": nil, "NilExecutorValidating": false,
		"ComplianceDBSecret": "", "CompliancePVC": ""})
	require.NoError(t, err)
	assert.NotEmpty(t, objs)
}
