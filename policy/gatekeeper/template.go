package gatekeeper

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Gatekeeper's names.
const (
	// TemplateGroup is the API group of ConstraintTemplates.
	TemplateGroup = "templates.gatekeeper.sh"
	// TemplateKind is the kind of a ConstraintTemplate.
	TemplateKind = "ConstraintTemplate"
	// ConstraintGroup is the API group of every constraint kind.
	ConstraintGroup = "constraints.gatekeeper.sh"
	// AdmissionTarget is the only target Gatekeeper audits.
	AdmissionTarget = "admission.k8s.gatekeeper.sh"
)

// Template is a compiled ConstraintTemplate.
type Template struct {
	// Name is the template's metadata.name.
	Name string
	// Kind is the constraint kind it defines (spec.crd.spec.names.kind).
	Kind string
	// Referential is true when its Rego reads data.inventory.
	Referential bool
	// SyncKinds are the kinds its metadata.gatekeeper.sh/requires-sync-data
	// annotation names as "group/version/kind" (empty group: "/v1/Pod"), for
	// the live engine to keep in the inventory.
	SyncKinds []string

	query rego.PreparedEvalQuery
}

// IsTemplate reports whether obj is a Gatekeeper ConstraintTemplate.
func IsTemplate(obj *unstructured.Unstructured) bool {
	return obj.GetKind() == TemplateKind && obj.GroupVersionKind().Group == TemplateGroup
}

// IsConstraint reports whether obj is a Gatekeeper constraint.
func IsConstraint(obj *unstructured.Unstructured) bool {
	return obj.GroupVersionKind().Group == ConstraintGroup
}

// Compile compiles a ConstraintTemplate's Rego (and its libs) against store,
// which holds data.inventory (nil: an empty one). It never panics on bad
// input: a template without a kind or Rego, Rego that does not parse or
// compile, or Rego that calls external_data is an error naming the template
// and what is wrong.
func Compile(ctx context.Context, obj *unstructured.Unstructured, store storage.Store) (*Template, error) {
	t := &Template{Name: obj.GetName()}
	fail := func(format string, args ...any) (*Template, error) {
		return nil, fmt.Errorf("ConstraintTemplate %s: %s", t.Name, fmt.Sprintf(format, args...))
	}
	kind, _, _ := unstructured.NestedString(obj.Object, "spec", "crd", "spec", "names", "kind")
	if kind == "" {
		return fail("spec.crd.spec.names.kind is missing: it names the constraint kind")
	}
	t.Kind = kind
	if want := strings.ToLower(kind); t.Name != want {
		return fail("metadata.name must be %q, the lowercase of the constraint kind %s (as Gatekeeper requires)", want, kind)
	}
	targets, _, err := unstructured.NestedSlice(obj.Object, "spec", "targets")
	if err != nil || len(targets) != 1 {
		return fail("spec.targets must hold exactly one target (%s)", AdmissionTarget)
	}
	target, _ := targets[0].(map[string]any)
	if name, _ := target["target"].(string); name != AdmissionTarget {
		return fail("spec.targets[0].target is %q; only %s is supported", name, AdmissionTarget)
	}
	src, _ := target["rego"].(string)
	if strings.TrimSpace(src) == "" {
		if _, hasCode := target["code"]; hasCode {
			return fail("spec.targets[0] has no rego; code engines other than Rego (CEL: K8sNativeValidation) are not supported")
		}
		return fail("spec.targets[0].rego is empty")
	}
	libs, _, _ := unstructured.NestedStringSlice(target, "libs")

	popts := ast.ParserOptions{RegoVersion: ast.RegoV0}
	mod, err := ast.ParseModuleWithOpts("rego", src, popts)
	if err != nil {
		return fail("rego does not parse: %s", regoError(err))
	}
	modules := []*ast.Module{mod}
	for i, l := range libs {
		m, err := ast.ParseModuleWithOpts(fmt.Sprintf("libs[%d]", i), l, popts)
		if err != nil {
			return fail("libs[%d] does not parse: %s", i, regoError(err))
		}
		if !strings.HasPrefix(m.Package.Path.String(), "data.lib.") {
			return fail("libs[%d]: package %s must be under lib (package lib.NAME), as Gatekeeper requires", i, strings.TrimPrefix(m.Package.Path.String(), "data."))
		}
		modules = append(modules, m)
	}
	for i, m := range modules {
		name := "rego"
		if i > 0 {
			name = fmt.Sprintf("libs[%d]", i-1)
		}
		if call := externalData(m); call != "" {
			return fail("%s calls external_data (%s): external data providers need Gatekeeper and are not supported by Flotilla's engine", name, call)
		}
		if readsInventory(m) {
			t.Referential = true
		}
	}
	if strings.HasPrefix(mod.Package.Path.String(), "data.lib.") || mod.Package.Path.String() == "data.lib" {
		return fail("rego: package %s is reserved for libs", strings.TrimPrefix(mod.Package.Path.String(), "data."))
	}
	opts := []func(*rego.Rego){
		rego.Query(mod.Package.Path.String() + ".violation"),
		rego.SetRegoVersion(ast.RegoV0),
		rego.ParsedModule(mod),
		rego.StrictBuiltinErrors(false),
	}
	for _, m := range modules[1:] {
		opts = append(opts, rego.ParsedModule(m))
	}
	if store != nil {
		opts = append(opts, rego.Store(store))
	}
	q, err := rego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		return fail("rego does not compile: %s", regoError(err))
	}
	t.query = q
	if ann := obj.GetAnnotations()["metadata.gatekeeper.sh/requires-sync-data"]; ann != "" {
		t.SyncKinds = parseSyncData(ann)
	}
	return t, nil
}

// externalData returns the first external_data call of m as text, or "".
func externalData(m *ast.Module) string {
	found := ""
	ast.WalkTerms(m, func(t *ast.Term) bool {
		if found != "" {
			return true
		}
		if c, ok := t.Value.(ast.Call); ok && len(c) > 0 && c[0].String() == "external_data" {
			found = t.String()
		}
		return false
	})
	ast.WalkExprs(m, func(e *ast.Expr) bool {
		if found == "" && e.IsCall() && e.Operator().String() == "external_data" {
			found = e.String()
		}
		return found != ""
	})
	return found
}

// readsInventory reports whether m refers to data.inventory.
func readsInventory(m *ast.Module) bool {
	inv := ast.MustParseRef("data.inventory")
	found := false
	ast.WalkRefs(m, func(r ast.Ref) bool {
		if r.HasPrefix(inv) || inv.HasPrefix(r) && len(r) > 1 {
			found = true
		}
		return found
	})
	return found
}

// Violation is one result of a template's violation rule.
type Violation struct {
	// Message is the result's msg.
	Message string
	// Details is the result's details, when any.
	Details any
}

// Review evaluates the template's violation rule with input (see Input).
func (t *Template) Review(ctx context.Context, input ast.Value) ([]Violation, error) {
	rs, err := t.query.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return nil, fmt.Errorf("ConstraintTemplate %s: evaluation failed: %w", t.Name, err)
	}
	var out []Violation
	for _, r := range rs {
		for _, e := range r.Expressions {
			items, ok := e.Value.([]any)
			if !ok {
				continue
			}
			for _, it := range items {
				v := Violation{}
				if m, ok := it.(map[string]any); ok {
					v.Message, _ = m["msg"].(string)
					v.Details = m["details"]
				}
				if v.Message == "" {
					v.Message = fmt.Sprintf("violation without a msg: %v", it)
				}
				out = append(out, v)
			}
		}
	}
	return out, nil
}

func parseSyncData(ann string) []string {
	// The annotation is JSON: [[{"groups": [...], "versions": [...], "kinds": [...]}]].
	var out []string
	var outer [][]struct {
		Groups   []string `json:"groups"`
		Versions []string `json:"versions"`
		Kinds    []string `json:"kinds"`
	}
	ann = strings.Trim(strings.TrimSpace(ann), `"`)
	if err := jsonUnmarshal([]byte(ann), &outer); err != nil {
		return nil
	}
	for _, alts := range outer {
		for _, a := range alts {
			for _, g := range a.Groups {
				for _, v := range a.Versions {
					for _, k := range a.Kinds {
						out = append(out, g+"/"+v+"/"+k)
					}
				}
			}
		}
	}
	return out
}

// regoError renders OPA's parse and compile errors on one line each
// ("rego:4: rego_parse_error: unexpected } token"), without the source
// excerpt OPA appends.
func regoError(err error) string {
	var errs ast.Errors
	if !errors.As(err, &errs) {
		var one *ast.Error
		if !errors.As(err, &one) {
			return err.Error()
		}
		errs = ast.Errors{one}
	}
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		loc := ""
		if e.Location != nil {
			loc = fmt.Sprintf("%s:%d: ", e.Location.File, e.Location.Row)
		}
		parts = append(parts, loc+e.Code+": "+e.Message)
	}
	return strings.Join(parts, "; ")
}
