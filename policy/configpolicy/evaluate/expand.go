package evaluate

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/configpolicy/templates"
)

// Annotations of a ConfigurationPolicy that change template handling.
const (
	// DisableTemplatesAnnotation "true" leaves {{ ... }} unresolved (compared literally).
	DisableTemplatesAnnotation = "policy.open-cluster-management.io/disable-templates"
	// HubTemplatesErrorAnnotation carries the hub's error resolving {{hub ... hub}}.
	HubTemplatesErrorAnnotation = "policy.open-cluster-management.io/hub-templates-error"
)

// Upstream's reasons and message for templates that cannot be resolved.
const (
	// ReasonHubTemplate: a {{hub ... hub}} template reached the managed cluster.
	ReasonHubTemplate = "Hub template resolution failure"
	// hubTemplatesMessage is upstream's message for hub templates left
	// unresolved: its engine resolves them on the managed cluster only with
	// an addon Flotilla does not have, so a hub template there always fails.
	hubTemplatesMessage = "the governance-standalone-hub-templating addon must be enabled to resolve hub templates on the managed cluster"
)

// expanded is one object template after template resolution, with its index
// in the policy (object-templates-raw: in the resolved list).
type expanded struct {
	index int
	ot    *policyv1.ObjectTemplate
	err   error
	// sensitive: the template reads a Secret (fromSecret, copySecretData),
	// so its diff is redacted unless recordDiff says otherwise.
	sensitive bool
}

// readsSecrets reports whether template text calls a function that reads a
// Secret.
func readsSecrets(text string) bool {
	return strings.Contains(text, "fromSecret") || strings.Contains(text, "copySecretData")
}

// expand resolves the policy's templates: object-templates-raw into a list
// of object templates, and {{ ... }} in each objectDefinition. Templates
// that call skipObject are left out. A policy-wide failure (unparsable
// object-templates-raw, hub templates) is returned as err.
func expand(p *policyv1.ConfigurationPolicy, c Cluster) ([]expanded, error) {
	disabled, _ := strconv.ParseBool(p.GetAnnotations()[DisableTemplatesAnnotation])
	// A hub template anywhere fails the whole policy, as upstream's; the
	// hub's own error (its annotation) is told when the hub recorded one.
	if !disabled && hasHub(p) {
		msg := p.GetAnnotations()[HubTemplatesErrorAnnotation]
		if msg == "" {
			msg = hubTemplatesMessage
		}
		return nil, &TemplateError{&ReasonedError{ReasonHubTemplate, msg}}
	}
	// Values the hub protected are decrypted here, in memory only; they are
	// secrets, so diffs are redacted.
	decryptedValues := false
	if protected(p) {
		plain, err := decrypted(p, c)
		if err != nil {
			return nil, &TemplateError{err}
		}
		p, decryptedValues = plain, true
	}
	list := p.Spec.ObjectTemplates
	rawSensitive := decryptedValues
	if raw := p.Spec.ObjectTemplatesRaw; raw != "" {
		rawSensitive = rawSensitive || !disabled && readsSecrets(raw)
		if len(list) > 0 {
			return nil, &TemplateError{fmt.Errorf("spec.object-templates and spec.object-templates-raw are both set; use one")}
		}
		text := raw
		resolved := !disabled && templates.Has(raw)
		if resolved {
			res, err := templates.Resolve(raw, reader{c})
			if err != nil {
				return nil, templateErr(err)
			}
			text = res.Text
		}
		var items []any
		if err := yaml.Unmarshal([]byte(text), &items); err != nil {
			// upstream's wording, with or without templates
			format := "Error parsing object-templates-raw YAML: %v"
			if resolved {
				format = "failed unmarshalling resolved object-templates-raw template: %v"
			}
			return nil, &TemplateError{&ReasonedError{ReasonTemplateError, fmt.Sprintf(format, err)}}
		}
		typed, err := templates.Typed(items)
		if err != nil {
			return nil, &TemplateError{fmt.Errorf("object-templates-raw: %w", err)}
		}
		list = nil
		for i, item := range typed.([]any) {
			data, _ := json.Marshal(item)
			if templates.Skipped(string(data)) {
				continue
			}
			var ot policyv1.ObjectTemplate
			if err := json.Unmarshal(data, &ot); err != nil {
				return nil, &TemplateError{fmt.Errorf("object-templates-raw[%d]: %w", i, err)}
			}
			list = append(list, ot)
		}
		if len(list) == 0 {
			return nil, nil
		}
	}
	out := make([]expanded, 0, len(list))
	for i := range list {
		ot := &list[i]
		raw := ot.ObjectDefinition.Raw
		if raw == nil && ot.ObjectDefinition.Object != nil {
			raw, _ = json.Marshal(ot.ObjectDefinition.Object)
		}
		e := expanded{index: i, ot: ot, sensitive: rawSensitive}
		switch {
		case disabled || !templates.Has(string(raw)):
		default:
			e.sensitive = e.sensitive || readsSecrets(string(raw))
			obj, skip, err := templates.ResolveJSON(raw, reader{c})
			if err != nil {
				e.err = templateErr(err)
				break
			}
			if skip {
				continue
			}
			data, _ := json.Marshal(obj)
			cp := *ot
			cp.ObjectDefinition = runtime.RawExtension{Raw: data}
			e.ot = &cp
		}
		out = append(out, e)
	}
	return out, nil
}

// templateErr words a template's failure as upstream's (reason `Error
// processing template`, the resolver's message) and marks a parse error as
// the policy's (TemplateError); a failure while executing (a missing
// Secret, say) may go away.
func templateErr(err error) error {
	re := &ReasonedError{ReasonTemplateError, err.Error()}
	if templates.IsParseError(err) {
		return &TemplateError{re}
	}
	return re
}

// hasHub reports whether a hub template ({{hub ... hub}}) is left anywhere
// in the policy's templates.
func hasHub(p *policyv1.ConfigurationPolicy) bool {
	if templates.HasHub(p.Spec.ObjectTemplatesRaw) {
		return true
	}
	for i := range p.Spec.ObjectTemplates {
		od := p.Spec.ObjectTemplates[i].ObjectDefinition
		raw := od.Raw
		if raw == nil && od.Object != nil {
			raw, _ = json.Marshal(od.Object)
		}
		if templates.HasHub(string(raw)) {
			return true
		}
	}
	return false
}

// reader lets templates read a Cluster.
type reader struct{ c Cluster }

func (r reader) Get(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	m, err := r.c.Mapping(gvk)
	if err != nil {
		return nil, err
	}
	if !m.Namespaced {
		ns = ""
	}
	return r.c.Get(m, ns, name)
}

func (r reader) List(gvk schema.GroupVersionKind, ns string) ([]*unstructured.Unstructured, error) {
	m, err := r.c.Mapping(gvk)
	if err != nil {
		return nil, err
	}
	if !m.Namespaced || ns != "" {
		if !m.Namespaced {
			ns = ""
		}
		return r.c.List(m, ns)
	}
	all, err := r.c.Namespaces()
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, n := range all {
		objs, err := r.c.List(m, n.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}
