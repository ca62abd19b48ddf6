package generator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// placements hands out placement names for policies and policy sets and
// collects the Placements to write: one per selector when a default placement
// name lets them be shared, one per policy or set otherwise, and each
// placementPath file's Placement once.
type placements struct {
	cfg        *Config
	names      map[string]bool   // every placement written
	bySelector map[string]string // selector key -> generated placement
	fromPath   map[string]bool   // placements read from files, by name
	objects    []map[string]any
}

func newPlacements(c *Config) *placements {
	return &placements{cfg: c, names: map[string]bool{}, bySelector: map[string]string{}, fromPath: map[string]bool{}}
}

// placement returns the name of the Placement for p (def is the defaults it
// was resolved against; owner names the policy or set), writing it if new.
func (s *placements) placement(def, p PlacementConfig, owner, where string) (string, error) {
	if p.PlacementName != "" {
		return p.PlacementName, nil
	}
	var name string
	var obj map[string]any
	if p.PlacementPath != "" {
		var err error
		name, obj, err = s.fromFile(p, where)
		if err != nil {
			return "", err
		}
		if s.fromPath[name] {
			return name, nil
		}
		s.fromPath[name] = true
	} else {
		key := selectorKey(p.selector())
		var reuse bool
		name, reuse = s.name(def, p, key, owner)
		if reuse {
			return name, nil
		}
		sel, err := labelSelector(p.selector())
		if err != nil {
			return "", s.cfg.errorf("%s.labelSelector: %v", where, err)
		}
		obj = map[string]any{
			"apiVersion": placementAPIVersion, "kind": placementKind,
			"metadata": map[string]any{"name": name, "namespace": s.cfg.PolicyDefaults.Namespace},
			"spec": map[string]any{
				"predicates": []any{map[string]any{"requiredClusterSelector": map[string]any{"labelSelector": sel}}},
				// Policies keep their placement on clusters that stop
				// reporting, as upstream's generated placements do.
				"tolerations": []any{
					map[string]any{"key": "cluster.open-cluster-management.io/unavailable", "operator": "Exists"},
					map[string]any{"key": "cluster.open-cluster-management.io/unreachable", "operator": "Exists"},
				},
			},
		}
		s.bySelector[key] = name
	}
	if s.names[name] {
		return "", s.cfg.errorf("%s: a second placement named %s (placement names must be unique)", where, name)
	}
	s.names[name] = true
	s.objects = append(s.objects, obj)
	return name, nil
}

// name is the name of a generated placement: p.Name; else, with a default
// placement name, the placement already made for the same selector (reuse)
// or the default name (numbered from the second); else placement-<owner>.
func (s *placements) name(def, p PlacementConfig, key, owner string) (string, bool) {
	if p.Name != "" {
		return p.Name, false
	}
	defName := def.Name
	if defName == "" {
		defName = s.cfg.PolicyDefaults.Placement.Name
	}
	if defName == "" {
		return "placement-" + owner, false
	}
	if existing, ok := s.bySelector[key]; ok {
		return existing, true
	}
	if len(s.bySelector) == 0 {
		return defName, false
	}
	return fmt.Sprintf("%s%d", defName, len(s.bySelector)+1), false
}

// fromFile is the first Placement of a placementPath file, which must be in
// the policies' namespace.
func (s *placements) fromFile(p PlacementConfig, where string) (string, map[string]any, error) {
	ns := s.cfg.PolicyDefaults.Namespace
	for _, doc := range p.placement {
		if doc["kind"] != placementKind {
			continue
		}
		meta, _ := doc["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		if name == "" {
			return "", nil, s.cfg.errorf("%s.placementPath %s: the Placement has no metadata.name", where, p.PlacementPath)
		}
		if got, _ := meta["namespace"].(string); got != ns {
			return "", nil, s.cfg.errorf("%s.placementPath %s: the Placement %s is in namespace %q; it must be in the policies' namespace %q (policyDefaults.namespace)",
				where, p.PlacementPath, name, got, ns)
		}
		return name, doc, nil
	}
	kinds := []string{}
	for _, doc := range p.placement {
		if k, ok := doc["kind"].(string); ok {
			kinds = append(kinds, k)
		}
	}
	hint := ""
	if slices.Contains(kinds, "PlacementRule") {
		hint = " (PlacementRule is deprecated in OCM and not served by Flotilla: write a Placement)"
	}
	return "", nil, s.cfg.errorf("%s.placementPath %s holds no Placement (kinds found: %s)%s", where, p.PlacementPath, strings.Join(kinds, ", "), hint)
}

// selectorKey identifies a selector for sharing placements: its canonical
// JSON (map keys sorted).
func selectorKey(sel map[string]any) string {
	if sel == nil {
		return "null"
	}
	b, _ := json.Marshal(sel)
	return string(b)
}

// labelSelector is the Placement labelSelector of a configuration selector:
// a full LabelSelector (matchLabels, matchExpressions) as written, or a map
// of labels to values, each label required to have its value (In) or, for an
// empty value, to exist. No selector selects every cluster.
func labelSelector(sel map[string]any) (map[string]any, error) {
	if sel == nil {
		return map[string]any{"matchExpressions": []any{}}, nil
	}
	raw, err := json.Marshal(sel)
	if err != nil {
		return nil, err
	}
	var ls metav1.LabelSelector
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ls); err == nil {
		if _, err := metav1.LabelSelectorAsSelector(&ls); err != nil {
			return nil, err
		}
		return sel, nil
	}
	ls = metav1.LabelSelector{}
	for label, v := range sel {
		value, ok := v.(string)
		if !ok {
			return nil, errors.New("it is neither a label selector (matchLabels, matchExpressions) nor a map of labels to string values")
		}
		req := metav1.LabelSelectorRequirement{Key: label, Operator: metav1.LabelSelectorOpExists}
		if value != "" {
			req.Operator, req.Values = metav1.LabelSelectorOpIn, []string{value}
		}
		ls.MatchExpressions = append(ls.MatchExpressions, req)
	}
	slices.SortFunc(ls.MatchExpressions, func(a, b metav1.LabelSelectorRequirement) int { return strings.Compare(a.Key, b.Key) })
	if _, err := metav1.LabelSelectorAsSelector(&ls); err != nil {
		return nil, err
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(&ls)
}
