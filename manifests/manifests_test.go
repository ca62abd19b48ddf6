package manifests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCRDsDecode(t *testing.T) {
	hub, err := CRDs(HubCRDs)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, c := range hub {
		names[c.Name] = true
	}
	for _, want := range []string{
		"managedclusters.cluster.open-cluster-management.io",
		"placements.cluster.open-cluster-management.io",
		"manifestworks.work.open-cluster-management.io",
		"managedclusteraddons.addon.open-cluster-management.io",
	} {
		assert.True(t, names[want], "hub CRDs lack %s", want)
	}

	spoke, err := CRDs(KlusterletCRDs)
	require.NoError(t, err)
	assert.Len(t, spoke, 2)
}

func TestCRDsUnknownSet(t *testing.T) {
	_, err := CRDs("nope")
	assert.ErrorContains(t, err, `CRD set "nope"`)
}
