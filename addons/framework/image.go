package framework

import (
	"strings"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// OverrideImage applies an AddOnDeploymentConfig's registries to image, with
// OCM's meaning of spec.registries: an entry whose source is a prefix of the
// image replaces that prefix with its mirror; an entry without a source
// replaces the image's registry and path (everything before the last "/")
// with its mirror. Entries apply in order and a later match wins; an entry
// without a mirror is ignored. No entry matching leaves image as it is.
//
//	OverrideImage("ghcr.io/flotilla-dev/flotilla:v1", []ImageMirror{{Source: "ghcr.io/flotilla-dev", Mirror: "registry.local:5000/ocm"}})
//	  = "registry.local:5000/ocm/flotilla:v1"
func OverrideImage(image string, registries []addonv1alpha1.ImageMirror) string {
	out := image
	for _, r := range registries {
		mirror := strings.TrimSuffix(r.Mirror, "/")
		switch {
		case mirror == "":
		case r.Source == "":
			name := image
			if i := strings.LastIndex(image, "/"); i >= 0 {
				name = image[i+1:]
			}
			out = mirror + "/" + name
		case strings.HasPrefix(image, r.Source):
			out = mirror + strings.TrimPrefix(image, r.Source)
		}
	}
	return out
}
