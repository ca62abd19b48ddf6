package distribute

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
)

// rule is a compiled override rule.
type rule struct {
	distv1alpha1.OverrideRule
	clusters clusterMatcher
	// patch is the decoded jsonPatch when no value holds a template (the
	// same for every cluster); nil: built per cluster.
	patch []patchOp
}

// compileRules compiles the rules' cluster selectors; a bad one is an error
// naming the rule.
func compileRules(rules []distv1alpha1.OverrideRule) ([]rule, error) {
	out := make([]rule, 0, len(rules))
	for _, r := range rules {
		m, err := compileSelector(r.Clusters)
		if err != nil {
			return nil, fmt.Errorf("override %q: clusters.%w", r.Name, err)
		}
		cr := rule{OverrideRule: r, clusters: m}
		if len(r.JSONPatch) > 0 && !patchHasTemplates(r.JSONPatch) {
			cr.patch, _ = buildPatch(r.JSONPatch, &Cluster{}) // an error shows again per cluster
		}
		out = append(out, cr)
	}
	return out, nil
}

// apply applies the rule to one manifest (decoded JSON) for cluster c, in
// the documented order: images, labels, annotations, command, args,
// jsonPatch. It returns the manifest, which jsonPatch may replace.
func (r rule) apply(obj map[string]any, c Cluster, budget *int) (map[string]any, error) {
	for i, o := range r.Images {
		value, err := Expand(o.Value, c)
		if err != nil {
			return nil, fmt.Errorf("images[%d]: %w", i, err)
		}
		err = eachContainer(obj, o.Container, func(ct map[string]any) error {
			ref, _ := ct["image"].(string)
			if ref == "" {
				return nil
			}
			next, err := OverrideImage(ref, o, value)
			if err != nil {
				return fmt.Errorf("image %q: %w", ref, err)
			}
			ct["image"] = next
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("images[%d]: %w", i, err)
		}
	}
	for _, md := range []struct {
		field string
		ops   []distv1alpha1.MetadataOverride
	}{{"labels", r.Labels}, {"annotations", r.Annotations}} {
		for i, o := range md.ops {
			if err := overrideMetadata(obj, md.field, o, c); err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", md.field, i, err)
			}
		}
	}
	for _, a := range []struct {
		field string
		ops   []distv1alpha1.ArgsOverride
	}{{"command", r.Command}, {"args", r.Args}} {
		for i, o := range a.ops {
			if err := overrideArgs(obj, a.field, o, c); err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", a.field, i, err)
			}
		}
	}
	if len(r.JSONPatch) > 0 {
		next, err := applyJSONPatch(obj, r.patch, r.JSONPatch, c, budget)
		if err != nil {
			return nil, fmt.Errorf("jsonPatch: %w", err)
		}
		obj = next
	}
	return obj, nil
}

// eachContainer calls f on every container (containers and initContainers,
// at any depth: a Pod's spec, a workload's pod template, a CronJob's job
// template) named name, or every container when name is empty.
func eachContainer(v any, name string, f func(map[string]any) error) error {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if k == "containers" || k == "initContainers" {
				if list, ok := child.([]any); ok {
					for _, item := range list {
						ct, ok := item.(map[string]any)
						if !ok {
							continue
						}
						if n, _ := ct["name"].(string); name != "" && n != name {
							continue
						}
						if err := f(ct); err != nil {
							return err
						}
					}
					continue
				}
			}
			if err := eachContainer(child, name, f); err != nil {
				return err
			}
		}
	case []any:
		for _, item := range t {
			if err := eachContainer(item, name, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// overrideMetadata applies one label or annotation override.
func overrideMetadata(obj map[string]any, field string, o distv1alpha1.MetadataOverride, c Cluster) error {
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	m, _ := meta[field].(map[string]any)
	switch op := opOrReplace(o.Operation); op {
	case distv1alpha1.OpRemove:
		delete(m, o.Key)
		if len(m) == 0 {
			delete(meta, field)
		}
		return nil
	case distv1alpha1.OpAdd, distv1alpha1.OpReplace:
		if _, has := m[o.Key]; has && op == distv1alpha1.OpAdd {
			return nil
		}
		v, err := Expand(o.Value, c)
		if err != nil {
			return err
		}
		if field == "labels" {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				return fmt.Errorf("label %s: %q is not a valid label value: %s", o.Key, v, strings.Join(errs, "; "))
			}
		}
		if m == nil {
			m = map[string]any{}
			meta[field] = m
		}
		m[o.Key] = v
		return nil
	default:
		return fmt.Errorf("unknown operation %q (want add, replace or remove)", op)
	}
}

// overrideArgs appends to or removes from containers' command or args.
func overrideArgs(obj map[string]any, field string, o distv1alpha1.ArgsOverride, c Cluster) error {
	values := make([]any, 0, len(o.Values))
	for _, v := range o.Values {
		x, err := Expand(v, c)
		if err != nil {
			return err
		}
		values = append(values, x)
	}
	return eachContainer(obj, o.Container, func(ct map[string]any) error {
		list, _ := ct[field].([]any)
		switch o.Operation {
		case distv1alpha1.ArgsAppend:
			list = append(list, values...)
		case distv1alpha1.ArgsRemove:
			drop := map[any]bool{}
			for _, v := range values {
				drop[v] = true
			}
			kept := list[:0:0]
			for _, v := range list {
				if !drop[v] {
					kept = append(kept, v)
				}
			}
			list = kept
		default:
			return fmt.Errorf("unknown operation %q (want append or remove)", o.Operation)
		}
		if len(list) == 0 {
			delete(ct, field)
		} else {
			ct[field] = list
		}
		return nil
	})
}

// buildPatch checks and decodes the operations, each string in a value
// expanded for c (a nil cluster checks the templates' syntax only).
func buildPatch(ops []distv1alpha1.JSONPatchOperation, c *Cluster) ([]patchOp, error) {
	in := make([]jsonPatchInput, 0, len(ops))
	for _, o := range ops {
		pi := jsonPatchInput{Op: o.Op, Path: o.Path, From: o.From}
		if o.Value != nil {
			pi.Value = o.Value.Raw
		}
		in = append(in, pi)
	}
	return decodePatch(in, c)
}

// checkPointer says whether p is a JSON pointer (RFC 6901): empty, or "/"
// followed by tokens where "~" is only "~0" or "~1".
func checkPointer(p string) error {
	if p == "" {
		return nil
	}
	if p[0] != '/' {
		return fmt.Errorf("%q is not a JSON pointer (it must start with /)", p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return fmt.Errorf("%q is not a JSON pointer (~ must be followed by 0 or 1)", p)
		}
	}
	return nil
}

// expandValue expands the templates in every string of v (c nil: syntax only).
func expandValue(v any, c *Cluster) (any, error) {
	switch t := v.(type) {
	case string:
		if c == nil {
			return t, CheckTemplate(t)
		}
		return Expand(t, *c)
	case map[string]any:
		for k, x := range t {
			y, err := expandValue(x, c)
			if err != nil {
				return nil, err
			}
			t[k] = y
		}
	case []any:
		for i, x := range t {
			y, err := expandValue(x, c)
			if err != nil {
				return nil, err
			}
			t[i] = y
		}
	}
	return v, nil
}

// patchHasTemplates says whether any operation's value holds a template.
func patchHasTemplates(ops []distv1alpha1.JSONPatchOperation) bool {
	for _, o := range ops {
		if o.Value != nil && strings.Contains(string(o.Value.Raw), templateOpen) {
			return true
		}
	}
	return false
}

// applyJSONPatch applies the operations (decoded already as patch, when
// not nil) to obj for cluster c, within *budget (maxPatchGrowth).
func applyJSONPatch(obj map[string]any, patch []patchOp, ops []distv1alpha1.JSONPatchOperation, c Cluster, budget *int) (map[string]any, error) {
	if patch == nil {
		var err error
		if patch, err = buildPatch(ops, &c); err != nil {
			return nil, err
		}
	}
	out, err := applyPatchWithin(obj, patch, budget)
	if err != nil {
		return nil, err
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the patch made the manifest something other than an object")
	}
	return m, nil
}
