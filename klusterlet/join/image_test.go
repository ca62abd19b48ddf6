package join

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestImageFor(t *testing.T) {
	tests := []struct {
		name                                string
		explicit, registry, bundle, version string
		want, err                           string
	}{
		{name: "defaults to this version", version: "v0.3.0", want: "ghcr.io/flotilla-dev/flotilla:v0.3.0"},
		{name: "registry override", registry: "registry.local:5000/ocm/", version: "v0.3.0", want: "registry.local:5000/ocm/flotilla:v0.3.0"},
		{name: "bundle version override", registry: "quay.io/me", bundle: "v0.2.1", version: "v0.3.0", want: "quay.io/me/flotilla:v0.2.1"},
		{name: "explicit image wins", explicit: "example.com/k:1", registry: "quay.io/me", bundle: "v9", want: "example.com/k:1"},
		{name: "bad tag", bundle: "v1:2", version: "x", err: "--bundle-version"},
		{name: "bad registry", registry: "quay.io/me@sha256", version: "v1", err: "--image-registry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ImageFor(tt.explicit, tt.registry, tt.bundle, tt.version)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
