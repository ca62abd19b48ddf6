package evaluate

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/configpolicy/compare"
)

// Outcome is what a template found for one object.
type Outcome string

const (
	// Matches: the object exists as specified (MustHave, MustOnlyHave).
	Matches Outcome = "Matches"
	// Missing: the object must exist and does not.
	Missing Outcome = "Missing"
	// Mismatch: the object exists but not as specified.
	Mismatch Outcome = "Mismatch"
	// Found: the object must not exist and does (MustNotHave).
	Found Outcome = "Found"
	// Absent: the object must not exist and does not (MustNotHave).
	Absent Outcome = "Absent"
)

// Verb is an action enforce takes on one object.
type Verb string

const (
	// None: nothing to do (or nothing enforce may do).
	None   Verb = ""
	Create Verb = "create"
	Update Verb = "update"
	Delete Verb = "delete"
)

// Finding is one object a template looked at.
type Finding struct {
	Mapping   Mapping
	Namespace string
	Name      string
	Outcome   Outcome
	// Live is the object on the cluster (nil when it does not exist).
	Live *unstructured.Unstructured
	// Desired is what enforce writes: the template object for Create, the
	// merged object for Update (nil otherwise).
	Desired *unstructured.Unstructured
	// Mismatches are the differing field paths (Mismatch only).
	Mismatches []string
	// StatusOnly: only status differs; enforce cannot repair it.
	StatusOnly bool
	// Diff is the unified diff of an update (empty when not recorded).
	Diff string
	// Action is what enforce would do; None for status-only mismatches and
	// for unnamed templates without an objectSelector.
	Action Verb

	// Applied is set by the runner when it carried out Action.
	Applied Verb
	// ApplyError is set by the runner when Action failed.
	ApplyError error
	// CreatedByPolicy and UID are set by the runner after a create.
	CreatedByPolicy bool
	UID             string
}

// TemplateResult is the outcome of one object template.
type TemplateResult struct {
	// Index of the template in spec.object-templates.
	Index int
	// ComplianceType is the normalized compliance type.
	ComplianceType policyv1.ComplianceType
	// Kind and Name of the template (Name empty for unnamed templates).
	Kind, Name string
	// Mapping of the template's kind (zero when it could not be resolved).
	Mapping Mapping
	// Unnamed: the template has no name and matches every object of its kind.
	Unnamed bool
	// Findings, sorted by namespace and name.
	Findings []*Finding
	// Error makes the template NonCompliant: malformed, unknown kind, no namespace...
	Error error
	// RecordDiff is the effective recordDiff.
	RecordDiff policyv1.RecordDiff

	selector labels.Selector // objectSelector of an unnamed template
	// clusterNS is the namespace a template of a cluster-scoped kind carries:
	// ignored for the object, but upstream's message says it.
	clusterNS string
	// sensitive: the template reads Secrets (its diff is redacted by default).
	sensitive bool
	// hasStatus: the template names a status (unchecked right after a create).
	hasStatus bool
	// selected counts the objects an objectSelector selected.
	selected int
	// note replaces the findings' events (a compliant template with nothing
	// to check, in upstream's words).
	note *event
}

// Result is the evaluation of a whole policy.
type Result struct {
	Policy    *policyv1.ConfigurationPolicy
	Templates []*TemplateResult
	// Enforce is true when the policy's remediationAction is enforce.
	Enforce bool
	// Kinds are the kinds the templates reference (resolved or not).
	Kinds []schema.GroupVersionKind
	// TemplateReads are the objects and lists the policy's templates read
	// while they were resolved: a change to one may change the policy.
	TemplateReads []Read

	dropped Dropped                          // what Status left out of the related objects
	touched map[policyv1.ObjectResource]bool // the objects it left out, or without their diff
}

// TemplateError says the policy itself is wrong (a malformed template, an
// unknown complianceType, a namespaced object with no namespace): evaluating
// again cannot help until the policy changes. Any other TemplateResult.Error
// comes from the cluster and may go away.
type TemplateError struct{ Err error }

func (e *TemplateError) Error() string { return e.Err.Error() }
func (e *TemplateError) Unwrap() error { return e.Err }

// Retryable reports whether evaluating again may change the outcome without
// the policy or a watched object changing: the cluster could not be read or
// refused an action.
func (r *Result) Retryable() bool {
	for _, t := range r.Templates {
		var te *TemplateError
		if t.Error != nil && !errors.As(t.Error, &te) {
			return true
		}
		for _, f := range t.Findings {
			if f.ApplyError != nil {
				return true
			}
		}
	}
	return false
}

// Policy evaluates p against c. It never modifies c's objects.
func Policy(p *policyv1.ConfigurationPolicy, c Cluster) *Result {
	r := &Result{Policy: p, Enforce: p.Spec.RemediationAction.IsEnforce()}
	var nsCache []string
	var nsErr error
	nsLoaded := false
	selected := func() ([]string, error) {
		if !nsLoaded {
			nsLoaded = true
			all, err := c.Namespaces()
			if err != nil {
				nsErr = fmt.Errorf("cannot list namespaces: %w", err)
			} else {
				if nsCache, nsErr = SelectNamespaces(p.Spec.NamespaceSelector, all); nsErr != nil {
					nsErr = &TemplateError{nsErr}
				}
			}
		}
		return nsCache, nsErr
	}
	rec := &recorder{Cluster: c}
	list, err := expand(p, rec)
	r.TemplateReads = rec.reads
	if err != nil {
		r.Templates = append(r.Templates, &TemplateResult{Index: 0, Error: err})
		return r
	}
	for _, e := range list {
		t := &TemplateResult{Index: e.index}
		r.Templates = append(r.Templates, t)
		if e.err != nil {
			t.ComplianceType = e.ot.ComplianceType.Normalize()
			t.Error = e.err
			continue
		}
		t.sensitive = e.sensitive
		t.evaluate(e.ot, p.Name, p.Spec.NamespaceSelector, c, selected)
		if !t.Mapping.GVK.Empty() {
			r.Kinds = append(r.Kinds, t.Mapping.GVK)
		}
	}
	return r
}

// Template decodes a template's objectDefinition.
func Template(ot *policyv1.ObjectTemplate) (*unstructured.Unstructured, error) {
	if len(ot.ObjectDefinition.Raw) == 0 && ot.ObjectDefinition.Object == nil {
		return nil, fmt.Errorf("objectDefinition is empty")
	}
	raw := ot.ObjectDefinition.Raw
	if raw == nil {
		var err error
		if raw, err = json.Marshal(ot.ObjectDefinition.Object); err != nil {
			return nil, err
		}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("objectDefinition is not an object: %w", err)
	}
	u := &unstructured.Unstructured{Object: m}
	var missing []string
	if u.GetAPIVersion() == "" {
		missing = append(missing, "apiVersion")
	}
	if u.GetKind() == "" {
		missing = append(missing, "kind")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("objectDefinition has no %s", strings.Join(missing, " and no "))
	}
	if _, err := schema.ParseGroupVersion(u.GetAPIVersion()); err != nil {
		return nil, fmt.Errorf("objectDefinition apiVersion %q: %w", u.GetAPIVersion(), err)
	}
	return u, nil
}

func (t *TemplateResult) evaluate(ot *policyv1.ObjectTemplate, policyName string, sel policyv1.Target, c Cluster, selected func() ([]string, error)) {
	t.ComplianceType = ot.ComplianceType.Normalize()
	switch t.ComplianceType {
	case policyv1.MustHave, policyv1.MustOnlyHave, policyv1.MustNotHave:
	default:
		t.Error = &TemplateError{fmt.Errorf("complianceType %q is not one of MustHave, MustOnlyHave, MustNotHave", ot.ComplianceType)}
		return
	}
	tmpl, err := Template(ot)
	if err != nil {
		if tmpl == nil || tmpl.GetKind() == "" || tmpl.GroupVersionKind().Version == "" {
			// upstream's wording when kind or apiVersion is missing
			if m, ok := definitionMap(ot); ok && (str(m["kind"]) == "" || str(m["apiVersion"]) == "") {
				err = &ReasonedError{ReasonDecodeError, fmt.Sprintf(
					"The kind and apiVersion fields are required on the object template at index %d in policy %s", t.Index, policyName)}
			}
		}
		t.Error = &TemplateError{err}
		return
	}
	t.Kind, t.Name, t.Unnamed = tmpl.GetKind(), tmpl.GetName(), tmpl.GetName() == ""
	_, t.hasStatus = tmpl.Object["status"]
	t.RecordDiff = ot.RecordDiff
	if t.RecordDiff == "" {
		t.RecordDiff = defaultRecordDiff(tmpl.GroupVersionKind(), t.sensitive)
	}
	gvk := tmpl.GroupVersionKind()
	t.Mapping.GVK = gvk
	m, err := c.Mapping(gvk)
	if err != nil {
		t.Error = err
		return
	}
	t.Mapping = m
	if ot.ObjectSelector != nil && t.Unnamed {
		sel, err := metav1.LabelSelectorAsSelector(ot.ObjectSelector)
		if err != nil {
			t.Error = &TemplateError{&ReasonedError{"objectSelector error", fmt.Sprintf(
				"Error parsing provided objectSelector in the object-template at index [%d]: %v", t.Index, err)}}
			return
		}
		t.selector = sel
	}
	opts := compare.Options{Mode: compare.MustHave}
	if t.ComplianceType == policyv1.MustOnlyHave {
		opts.Mode = compare.MustOnlyHave
	}
	if ot.MetadataComplianceType != "" {
		opts.MetadataModeSet = true
		if policyv1.ComplianceType(ot.MetadataComplianceType).Normalize() == policyv1.MustOnlyHave {
			opts.MetadataMode = compare.MustOnlyHave
		}
	}

	namespaces := []string{""}
	switch {
	case !m.Namespaced:
		t.clusterNS = tmpl.GetNamespace()
		if t.clusterNS != "" && !selectorIsEmpty(sel) {
			t.Error = &TemplateError{&ReasonedError{ReasonTemplateError,
				"The object definition's namespace must match the result from the namespace selector after template resolution"}}
			return
		}
	case tmpl.GetNamespace() != "":
		namespaces = []string{tmpl.GetNamespace()}
	default:
		ns, err := selected()
		if err != nil {
			t.Error = err
			return
		}
		if len(ns) == 0 {
			space := ""
			if t.Name != "" {
				space = " "
			}
			t.Error = &TemplateError{&ReasonedError{ReasonMissingNamespace, fmt.Sprintf(
				"namespaced object%s%s of kind %s has no namespace specified from the policy namespaceSelector nor the object metadata",
				space, t.Name, t.Kind)}}
			return
		}
		namespaces = ns
	}
	for _, ns := range namespaces {
		if err := t.evaluateIn(tmpl, ns, c, opts); err != nil {
			t.Error = err
			return
		}
	}
	if t.selector != nil && len(t.Findings) == 0 {
		msg := fmt.Sprintf("No objects of kind %s were matched from the policy objectSelector", t.Kind)
		if t.selected > 0 { // MustNotHave: selected, but none is like the template
			where := "namespace"
			if len(namespaces) > 1 {
				where = "namespaces:"
			}
			msg = fmt.Sprintf("%s missing as expected in %s %s", m.Resource, where, strings.Join(namespaces, ", "))
		}
		t.note = &event{compliant: true, message: msg}
	}
	sort.SliceStable(t.Findings, func(i, j int) bool {
		a, b := t.Findings[i], t.Findings[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}

// Selected reports whether the template picks its objects with an
// objectSelector (it has no name): enforce acts on each selected object.
func (t *TemplateResult) Selected() bool { return t.selector != nil }

func (t *TemplateResult) describe() string {
	if t.Unnamed {
		return t.Mapping.Resource
	}
	return fmt.Sprintf("%s [%s]", t.Mapping.Resource, t.Name)
}

// selectorIsEmpty is upstream's test of an empty namespaceSelector: no
// include and no label selector (an exclude alone selects nothing).
func selectorIsEmpty(s policyv1.Target) bool {
	return len(s.Include) == 0 && s.MatchLabels == nil && s.MatchExpressions == nil
}

// definitionMap decodes an objectDefinition as a map.
func definitionMap(ot *policyv1.ObjectTemplate) (map[string]any, bool) {
	if ot.ObjectDefinition.Object != nil {
		raw, err := json.Marshal(ot.ObjectDefinition.Object)
		if err != nil {
			return nil, false
		}
		ot = &policyv1.ObjectTemplate{ObjectDefinition: runtime.RawExtension{Raw: raw}}
	}
	var m map[string]any
	if err := json.Unmarshal(ot.ObjectDefinition.Raw, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

func (t *TemplateResult) evaluateIn(tmpl *unstructured.Unstructured, ns string, c Cluster, opts compare.Options) error {
	if !t.Unnamed {
		live, err := c.Get(t.Mapping, ns, t.Name)
		if err != nil {
			// upstream's wording; retried (not a TemplateError)
			return &ReasonedError{"api error", fmt.Sprintf("Error retrieving an object for object-template at index [%d]: cannot read %s %s: %v",
				t.Index, t.Mapping.Resource, name(ns, t.Name), err)}
		}
		t.Findings = append(t.Findings, t.judge(tmpl, live, ns, t.Name, opts))
		return nil
	}
	objs, err := c.List(t.Mapping, ns)
	if err != nil {
		where := ""
		if ns != "" {
			where = " in namespace " + ns
		}
		return fmt.Errorf("cannot list %s%s: %w", t.Mapping.Resource, where, err)
	}
	var matching []*Finding
	others := 0
	for _, o := range objs {
		if t.selector != nil && !t.selector.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		t.selected++
		f := t.judge(tmpl, o, ns, o.GetName(), opts)
		if t.selector == nil {
			// without an objectSelector an unnamed template is inform only,
			// as upstream's; with one, each selected object is enforced as
			// if the template named it
			f.Action, f.Desired = None, nil
		}
		switch {
		case f.Outcome == Matches || f.Outcome == Found:
			matching = append(matching, f)
		case t.selector != nil && t.ComplianceType != policyv1.MustNotHave:
			// with an objectSelector, upstream names each selected object
			matching = append(matching, f)
		default:
			others++
		}
	}
	if t.selector != nil {
		t.Findings = append(t.Findings, matching...)
		return nil
	}
	if t.ComplianceType == policyv1.MustNotHave {
		if len(matching) == 0 {
			t.Findings = append(t.Findings, &Finding{Mapping: t.Mapping, Namespace: ns, Outcome: Absent})
		}
		t.Findings = append(t.Findings, matching...)
		return nil
	}
	switch {
	case len(matching) > 0:
		t.Findings = append(t.Findings, matching...)
	case others > 0:
		// upstream names none of the objects that do not match
		t.Findings = append(t.Findings, &Finding{Mapping: t.Mapping, Namespace: ns, Outcome: Mismatch})
	default:
		t.Findings = append(t.Findings, &Finding{Mapping: t.Mapping, Namespace: ns, Outcome: Missing})
	}
	return nil
}

func name(ns, n string) string {
	if ns == "" {
		return n
	}
	return ns + "/" + n
}

// judge compares the template with one object (live may be nil).
func (t *TemplateResult) judge(tmpl, live *unstructured.Unstructured, ns, name string, opts compare.Options) *Finding {
	f := &Finding{Mapping: t.Mapping, Namespace: ns, Name: name, Live: live}
	if t.ComplianceType == policyv1.MustNotHave {
		if live == nil {
			f.Outcome = Absent
			return f
		}
		if t.Unnamed && !compare.Matches(tmpl.Object, live.Object, opts) {
			f.Outcome = Absent
			return f
		}
		f.Outcome, f.Action = Found, Delete
		return f
	}
	if live == nil {
		desired := tmpl.DeepCopy()
		if ns != "" {
			desired.SetNamespace(ns)
		}
		f.Outcome, f.Action, f.Desired = Missing, Create, desired
		return f
	}
	res := compare.Object(tmpl.Object, live.Object, opts)
	if res.Match {
		f.Outcome = Matches
		return f
	}
	f.Outcome, f.Mismatches, f.StatusOnly = Mismatch, res.Mismatches, res.StatusOnly
	f.Desired = &unstructured.Unstructured{Object: res.Merged}
	if !res.StatusOnly {
		f.Action = Update
	}
	f.Diff = t.DiffOf(ns, name, live.Object, res.Merged)
	return f
}

// Compliance is the policy's overall state: NonCompliant when any template is.
func (r *Result) Compliance() policyv1.ComplianceState {
	for _, t := range r.Templates {
		if t.Compliance() != policyv1.Compliant {
			return policyv1.NonCompliant
		}
	}
	return policyv1.Compliant
}

// Compliance of one template, taking applied actions into account.
func (t *TemplateResult) Compliance() policyv1.ComplianceState {
	for _, e := range t.events() {
		if !e.compliant {
			return policyv1.NonCompliant
		}
	}
	return policyv1.Compliant
}

// Compliant reports whether the object is as required (after any applied action).
func (f *Finding) Compliant() bool {
	if f.ApplyError != nil {
		return false
	}
	if f.Applied != None {
		return true
	}
	return f.Outcome == Matches || f.Outcome == Absent
}

// Actions are the findings enforce would act on, in template order.
func (r *Result) Actions() []*Finding {
	var out []*Finding
	for _, t := range r.Templates {
		for _, f := range t.Findings {
			if f.Action != None {
				out = append(out, f)
			}
		}
	}
	return out
}
