package distribute

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
)

// Validate lists what is wrong with a policy's spec that can be judged
// without a cluster, each problem naming its field: selectors that do not
// compile, templates that are not well formed, image components and label
// values that are invalid once they hold no template, JSON patch operations
// without a value or with a bad pointer. The CRD schema bounds the rest
// (sizes, enums, patterns). Empty: valid.
func Validate(spec distv1alpha1.DistributionPolicySpec) []string {
	var problems []string
	bad := func(field string, err error) { problems = append(problems, field+": "+err.Error()) }
	tmpl := func(field, s string) {
		if err := CheckTemplate(s); err != nil {
			bad(field, err)
		}
	}
	for i, r := range spec.Overrides {
		f := fmt.Sprintf("spec.overrides[%d]", i)
		if _, err := compileSelector(r.Clusters); err != nil {
			bad(f+".clusters", err)
		}
		for j, o := range r.Images {
			g := fmt.Sprintf("%s.images[%d].value", f, j)
			tmpl(g, o.Value)
			if opOrReplace(o.Operation) != distv1alpha1.OpRemove && !strings.Contains(o.Value, templateOpen) {
				if err := CheckImageValue(o.Component, o.Value); err != nil {
					bad(g, err)
				}
			}
		}
		for j, o := range r.Labels {
			g := fmt.Sprintf("%s.labels[%d]", f, j)
			if errs := validation.IsQualifiedName(o.Key); len(errs) > 0 {
				bad(g+".key", fmt.Errorf("%s", strings.Join(errs, "; ")))
			}
			tmpl(g+".value", o.Value)
			if opOrReplace(o.Operation) != distv1alpha1.OpRemove && !strings.Contains(o.Value, templateOpen) {
				if errs := validation.IsValidLabelValue(o.Value); len(errs) > 0 {
					bad(g+".value", fmt.Errorf("%q: %s", o.Value, strings.Join(errs, "; ")))
				}
			}
		}
		for j, o := range r.Annotations {
			g := fmt.Sprintf("%s.annotations[%d]", f, j)
			if errs := validation.IsQualifiedName(strings.ToLower(o.Key)); len(errs) > 0 {
				bad(g+".key", fmt.Errorf("%s", strings.Join(errs, "; ")))
			}
			tmpl(g+".value", o.Value)
		}
		for _, a := range []struct {
			name string
			ops  []distv1alpha1.ArgsOverride
		}{{"command", r.Command}, {"args", r.Args}} {
			for j, o := range a.ops {
				for k, v := range o.Values {
					tmpl(fmt.Sprintf("%s.%s[%d].values[%d]", f, a.name, j, k), v)
				}
			}
		}
		if len(r.JSONPatch) > 0 {
			if _, err := buildPatch(r.JSONPatch, nil); err != nil {
				bad(f+".jsonPatch", err)
			}
		}
	}
	if r := spec.Replicas; r != nil {
		for i, w := range r.Weights {
			if _, err := compileSelector(w.Clusters); err != nil {
				bad(fmt.Sprintf("spec.replicas.weights[%d].clusters", i), err)
			}
		}
	}
	return problems
}
