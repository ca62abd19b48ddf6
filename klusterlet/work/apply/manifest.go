package apply

import (
	"encoding/json"
	"fmt"
	"strings"

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

// ConfigFor finds the manifestConfigs for a resource, as OCM does: an entry
// applies when group and resource are equal and its name and namespace match
// ("*" matches any run of characters, so "app-*" or "*"); of all the entries
// that apply, the first one setting each of updateStrategy, feedbackRules and
// conditionRules gives it. nil when none applies.
func ConfigFor(cfgs []workv1.ManifestConfigOption, group, resource, namespace, name string) *workv1.ManifestConfigOption {
	var out *workv1.ManifestConfigOption
	for i := range cfgs {
		id := cfgs[i].ResourceIdentifier
		if id.Group != group || id.Resource != resource || !match(id.Name, name) || !match(id.Namespace, namespace) {
			continue
		}
		if out == nil {
			out = &workv1.ManifestConfigOption{ResourceIdentifier: workv1.ResourceIdentifier{Group: group, Resource: resource, Namespace: namespace, Name: name}}
		}
		c := &cfgs[i]
		if out.UpdateStrategy == nil {
			out.UpdateStrategy = c.UpdateStrategy
		}
		if len(out.FeedbackRules) == 0 {
			out.FeedbackRules = c.FeedbackRules
		}
		if len(out.ConditionRules) == 0 {
			out.ConditionRules = c.ConditionRules
		}
		out.FeedbackScrapeType = c.FeedbackScrapeType
	}
	return out
}

// match reports whether value matches pattern, where "*" stands for any run
// of characters (possibly empty) and everything else for itself.
func match(pattern, value string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == value
	}
	if !strings.HasPrefix(value, parts[0]) {
		return false
	}
	value = value[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(value, p)
		if i < 0 {
			return false
		}
		value = value[i+len(p):]
	}
	return len(value) >= len(last) && strings.HasSuffix(value, last)
}
