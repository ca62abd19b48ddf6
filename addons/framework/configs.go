package framework

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// DesiredConfigs are the configs that apply to one cluster's addon, one per
// config type (group/resource), sorted by group then resource. Three layers,
// each overriding the one before for the types it names (OCM's order):
//
//  1. supported: the ClusterManagementAddOn's spec.supportedConfigs[].defaultConfig;
//  2. placement: spec.installStrategy.placements[].configs of the placement
//     that decides the cluster (nil when none does);
//  3. own: the ManagedClusterAddOn's spec.configs.
//
// Within one layer the last config of a type wins.
func DesiredConfigs(supported []addonv1alpha1.ConfigMeta, placement, own []addonv1alpha1.AddOnConfig) []addonv1alpha1.AddOnConfig {
	byType := map[addonv1alpha1.ConfigGroupResource]addonv1alpha1.ConfigReferent{}
	for _, sc := range supported {
		if sc.DefaultConfig != nil {
			byType[sc.ConfigGroupResource] = *sc.DefaultConfig
		}
	}
	for _, layer := range [][]addonv1alpha1.AddOnConfig{placement, own} {
		for _, c := range layer {
			byType[c.ConfigGroupResource] = c.ConfigReferent
		}
	}
	out := make([]addonv1alpha1.AddOnConfig, 0, len(byType))
	for gr, ref := range byType {
		out = append(out, addonv1alpha1.AddOnConfig{ConfigGroupResource: gr, ConfigReferent: ref})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Resource < out[j].Resource
	})
	return out
}

// SpecHash is the hash OCM shows in configReferences for a config object:
// sha256 (hex) of the JSON of its spec (keys sorted). obj is a typed config
// (AddOnDeploymentConfig, AddOnTemplate) or an unstructured one. Empty
// objects are left out, as an apiserver stores a spec written from YAML that
// does not mention them (a typed Go client sends "proxyConfig":{}); so the
// hash equals OCM's for such objects.
func SpecHash(obj runtime.Object) (string, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return "", err
	}
	spec, ok := u["spec"]
	if !ok {
		return "", fmt.Errorf("%T has no spec", obj)
	}
	raw, err := json.Marshal(pruneEmpty(spec))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

// ConfigKey names a config in OCM's work annotation
// open-cluster-management.io/config-spec-hash: <resource>.<group>/<namespace>/<name>
// (the namespace empty for a cluster-scoped config).
func ConfigKey(gr addonv1alpha1.ConfigGroupResource, ref addonv1alpha1.ConfigReferent) string {
	res := gr.Resource
	if gr.Group != "" {
		res += "." + gr.Group
	}
	return res + "/" + ref.Namespace + "/" + ref.Name
}

// pruneEmpty drops empty objects from maps, recursively.
func pruneEmpty(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			e = pruneEmpty(e)
			if m, ok := e.(map[string]any); ok && len(m) == 0 {
				continue
			}
			out[k] = e
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = pruneEmpty(e)
		}
		return out
	}
	return v
}
