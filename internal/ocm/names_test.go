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
