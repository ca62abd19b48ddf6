package gatekeeper

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// Engine holds compiled templates by constraint kind and the inventory they
// read. It does no I/O; the caller feeds it templates and objects.
type Engine struct {
	inv       *Inventory
	templates map[string]*Template
	// broken are the compile errors of templates by constraint kind (or by
	// template name when the kind could not be read).
	broken map[string]error
}

// NewEngine returns an engine with no templates and an empty inventory.
func NewEngine() *Engine {
	return &Engine{inv: NewInventory(), templates: map[string]*Template{}, broken: map[string]error{}}
}

// Inventory is the engine's data.inventory.
func (e *Engine) Inventory() *Inventory { return e.inv }

// AddTemplate compiles a ConstraintTemplate (replacing an earlier one of the
// same kind). A template that does not compile is remembered: constraints of
// its kind report the error.
func (e *Engine) AddTemplate(ctx context.Context, obj *unstructured.Unstructured) (*Template, error) {
	kind, _, _ := unstructured.NestedString(obj.Object, "spec", "crd", "spec", "names", "kind")
	if kind == "" {
		kind = obj.GetName()
	}
	t, err := Compile(ctx, obj, e.inv.Store())
	if err != nil {
		delete(e.templates, kind)
		e.broken[kind] = err
		return nil, err
	}
	delete(e.broken, kind)
	e.templates[kind] = t
	return t, nil
}

// RemoveTemplate forgets the template of a constraint kind.
func (e *Engine) RemoveTemplate(kind string) {
	delete(e.templates, kind)
	delete(e.broken, kind)
}

// Template returns the template of a constraint kind, or why there is none.
func (e *Engine) Template(kind string) (*Template, error) {
	if t, ok := e.templates[kind]; ok {
		return t, nil
	}
	if err, ok := e.broken[kind]; ok {
		return nil, err
	}
	return nil, fmt.Errorf("no ConstraintTemplate defines the constraint kind %s", kind)
}

// Templates returns the compiled templates, by constraint kind.
func (e *Engine) Templates() map[string]*Template { return e.templates }

// Object is an object under review, with its input prepared once.
type Object struct {
	Ref    ObjectRef
	target Target
	review *ast.Term
}

// ObjectRef names an object.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func (r ObjectRef) String() string {
	if r.Namespace != "" {
		return r.Kind + " " + r.Namespace + "/" + r.Name
	}
	return r.Kind + " " + r.Name
}

// NewObject prepares obj for review; nsLabels are the labels of its
// namespace (of itself for a Namespace), nil when unknown.
func NewObject(obj *unstructured.Unstructured, nsLabels map[string]string) (*Object, error) {
	gvk := obj.GroupVersionKind()
	review := map[string]any{
		"kind":      map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind},
		"name":      obj.GetName(),
		"namespace": obj.GetNamespace(),
		"operation": "UPDATE",
		"object":    obj.Object,
	}
	v, err := ast.InterfaceToValue(review)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	if obj.GetKind() == "Namespace" && gvk.Group == "" && nsLabels == nil {
		nsLabels = obj.GetLabels()
		if nsLabels == nil {
			nsLabels = map[string]string{}
		}
	}
	return &Object{
		Ref: ObjectRef{APIVersion: obj.GetAPIVersion(), Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()},
		target: Target{Group: gvk.Group, Kind: gvk.Kind, Name: obj.GetName(), Namespace: obj.GetNamespace(),
			Labels: obj.GetLabels(), NamespaceLabels: nsLabels},
		review: ast.NewTerm(v),
	}, nil
}

// Matches reports whether c's match selects o.
func (c *Constraint) Matches(o *Object) bool { return c.Match.Matches(o.target) }

func (c *Constraint) parametersTerm() (*ast.Term, error) {
	if c.params != nil {
		return c.params, nil
	}
	p := c.Parameters
	if p == nil {
		p = map[string]any{}
	}
	v, err := ast.InterfaceToValue(p)
	if err != nil {
		return nil, fmt.Errorf("constraint %s: spec.parameters: %w", c.ID(), err)
	}
	c.params = ast.NewTerm(v)
	return c.params, nil
}

// Review evaluates constraint c against o (which c must match) and returns
// its violations.
func (e *Engine) Review(ctx context.Context, c *Constraint, o *Object) ([]Violation, error) {
	t, err := e.Template(c.Kind)
	if err != nil {
		return nil, err
	}
	params, err := c.parametersTerm()
	if err != nil {
		return nil, err
	}
	input := ast.NewObject(
		ast.Item(ast.StringTerm("review"), o.review),
		ast.Item(ast.StringTerm("parameters"), params),
	)
	return t.Review(ctx, input)
}

// ObjectViolation is one violation of a constraint by an object.
type ObjectViolation struct {
	Object  ObjectRef `json:"object"`
	Message string    `json:"message"`
}

// Result is one constraint's audit.
type Result struct {
	// Constraint is "Kind/name"; Action its enforcementAction.
	Constraint string `json:"constraint"`
	Action     string `json:"enforcementAction"`
	// Audited counts the objects its match selected.
	Audited int `json:"audited"`
	// Violations, sorted by object.
	Violations []ObjectViolation `json:"violations,omitempty"`
	// Err is why it could not be audited (no template, a template that
	// does not compile, an evaluation error).
	Err error `json:"-"`
}

// MaxListed bounds the violations a message lists.
const MaxListed = 20

// Compliance is the result's verdict and message: NonCompliant when the
// constraint could not be audited or, with enforcementAction deny, when an
// object violates it; warn and dryrun violations are listed as warnings of a
// Compliant constraint.
func (r *Result) Compliance() (policyv1.ComplianceState, string) {
	if r.Err != nil {
		return policyv1.NonCompliant, r.Err.Error()
	}
	head := r.Constraint
	if r.Action != ActionDeny {
		head += " (enforcementAction " + r.Action + ")"
	}
	if len(r.Violations) == 0 {
		return policyv1.Compliant, fmt.Sprintf("%s: no violations in %d matching objects", head, r.Audited)
	}
	noun := "violation"
	state := policyv1.NonCompliant
	if r.Action != ActionDeny {
		noun, state = "warning", policyv1.Compliant
	}
	if len(r.Violations) != 1 {
		noun += "s"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d %s in %d matching objects: ", head, len(r.Violations), noun, r.Audited)
	for i, v := range r.Violations {
		if i == MaxListed {
			fmt.Fprintf(&b, "; +%d more", len(r.Violations)-MaxListed)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "[%s] %s", v.Object, v.Message)
	}
	return state, b.String()
}

// SortViolations orders violations by object, then message.
func SortViolations(vs []ObjectViolation) {
	sort.Slice(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		if a.Object != b.Object {
			return a.Object.String() < b.Object.String()
		}
		return a.Message < b.Message
	})
}

// Audit evaluates every constraint against the objects its match selects
// and returns one result per constraint, in the constraints' order. Objects
// are prepared once for every constraint.
func (e *Engine) Audit(ctx context.Context, constraints []*Constraint, objects []*Object) []Result {
	out := make([]Result, 0, len(constraints))
	for _, c := range constraints {
		r := Result{Constraint: c.ID(), Action: c.Action}
		if _, err := e.Template(c.Kind); err != nil {
			r.Err = err
			out = append(out, r)
			continue
		}
		for _, o := range objects {
			if !c.Matches(o) {
				continue
			}
			r.Audited++
			vs, err := e.Review(ctx, c, o)
			if err != nil {
				r.Err = fmt.Errorf("%s on %s: %w", c.ID(), o.Ref, err)
				break
			}
			for _, v := range vs {
				r.Violations = append(r.Violations, ObjectViolation{Object: o.Ref, Message: v.Message})
			}
		}
		SortViolations(r.Violations)
		out = append(out, r)
	}
	return out
}

// Snapshot prepares objects for review: the labels of each object's
// namespace come from the Namespaces among objs.
func Snapshot(objs []*unstructured.Unstructured) ([]*Object, error) {
	nsLabels := map[string]map[string]string{}
	for _, o := range objs {
		if o.GetKind() == "Namespace" && o.GroupVersionKind().Group == "" {
			l := o.GetLabels()
			if l == nil {
				l = map[string]string{}
			}
			nsLabels[o.GetName()] = l
		}
	}
	out := make([]*Object, 0, len(objs))
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns == "" && o.GetKind() == "Namespace" {
			ns = o.GetName()
		}
		prepared, err := NewObject(o, nsLabels[ns])
		if err != nil {
			return nil, err
		}
		out = append(out, prepared)
	}
	return out, nil
}
