package apply

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Decode reads one manifest of a ManifestWork, which must be a JSON object with
// apiVersion, kind and metadata.name.
func Decode(m workv1.Manifest) (*unstructured.Unstructured, error) {
	raw := m.Raw
	if len(raw) == 0 && m.Object != nil {
		var err error
		if raw, err = json.Marshal(m.Object); err != nil {
			return nil, err
		}
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		return nil, fmt.Errorf("the manifest is not a JSON object: %w", err)
	}
	switch {
	case u.GetAPIVersion() == "" || u.GetKind() == "":
		return nil, fmt.Errorf("the manifest has no apiVersion or kind")
	case u.GetName() == "":
		return nil, fmt.Errorf("the %s manifest has no metadata.name", u.GetKind())
	}
	return u, nil
}

// ConfigFor finds the manifestConfigs entry for a resource: group and resource
// must be equal, name and namespace equal or "*". The first match wins; nil
// when none matches.
func ConfigFor(cfgs []workv1.ManifestConfigOption, group, resource, namespace, name string) *workv1.ManifestConfigOption {
	for i := range cfgs {
		id := cfgs[i].ResourceIdentifier
		if id.Group == group && id.Resource == resource && match(id.Name, name) && match(id.Namespace, namespace) {
			return &cfgs[i]
		}
	}
	return nil
}

func match(pattern, value string) bool { return pattern == "*" || pattern == value }
