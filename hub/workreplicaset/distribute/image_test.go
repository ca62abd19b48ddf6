package distribute

import (
	"testing"

	"github.com/stretchr/testify/assert"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
)

func TestParseImage(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		ref  string
		want Image
	}{
		{"nginx", Image{Repository: "nginx"}},
		{"nginx:1.27", Image{Repository: "nginx", Tag: "1.27"}},
		{"library/nginx:1.27", Image{Repository: "library/nginx", Tag: "1.27"}},
		{"docker.io/library/nginx:1.27", Image{Registry: "docker.io", Repository: "library/nginx", Tag: "1.27"}},
		{"localhost:5000/app", Image{Registry: "localhost:5000", Repository: "app"}},
		{"localhost/app:v1", Image{Registry: "localhost", Repository: "app", Tag: "v1"}},
		{"registry.eu.example.com:443/team/app:v1@" + d, Image{Registry: "registry.eu.example.com:443", Repository: "team/app", Tag: "v1", Digest: d}},
		{"app@" + d, Image{Repository: "app", Digest: d}},
	}
	for _, tc := range tests {
		t.Run(tc.ref, func(t *testing.T) {
			got := ParseImage(tc.ref)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.ref, got.String(), "round trip")
		})
	}
}

func TestOverrideImage(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	o := func(c distv1alpha1.ImageComponent, op distv1alpha1.Operation) distv1alpha1.ImageOverride {
		return distv1alpha1.ImageOverride{Component: c, Operation: op}
	}
	tests := []struct {
		name, ref string
		o         distv1alpha1.ImageOverride
		value     string
		want, err string
	}{
		{"replace registry", "docker.io/library/nginx:1.27", o(distv1alpha1.Registry, ""), "registry.eu.example.com", "registry.eu.example.com/library/nginx:1.27", ""},
		{"add registry where none", "nginx:1.27", o(distv1alpha1.Registry, distv1alpha1.OpAdd), "mirror.local:5000", "mirror.local:5000/nginx:1.27", ""},
		{"add registry keeps one", "quay.io/nginx:1.27", o(distv1alpha1.Registry, distv1alpha1.OpAdd), "mirror.local", "quay.io/nginx:1.27", ""},
		{"remove registry", "quay.io/nginx:1.27", o(distv1alpha1.Registry, distv1alpha1.OpRemove), "", "nginx:1.27", ""},
		{"replace repository", "quay.io/team/app:v1", o(distv1alpha1.Repository, distv1alpha1.OpReplace), "other/app", "quay.io/other/app:v1", ""},
		{"remove repository refused", "app:v1", o(distv1alpha1.Repository, distv1alpha1.OpRemove), "", "", "repository cannot be removed"},
		{"replace tag", "app:v1", o(distv1alpha1.Tag, ""), "v2", "app:v2", ""},
		{"add tag where none", "app", o(distv1alpha1.Tag, distv1alpha1.OpAdd), "v2", "app:v2", ""},
		{"remove tag", "app:v1@" + d, o(distv1alpha1.Tag, distv1alpha1.OpRemove), "", "app@" + d, ""},
		{"replace digest", "app:v1", o(distv1alpha1.Digest, ""), d, "app:v1@" + d, ""},
		{"bad tag", "app:v1", o(distv1alpha1.Tag, ""), "v 2", "", `"v 2" is not a valid image tag`},
		{"bad registry", "app:v1", o(distv1alpha1.Registry, ""), "https://r", "", "not a valid image registry"},
		{"bad digest", "app:v1", o(distv1alpha1.Digest, ""), "sha256:short", "", "not a valid image digest"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OverrideImage(tc.ref, tc.o, tc.value)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
