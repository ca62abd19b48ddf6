package evaluate

import (
	"fmt"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/runtime"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/configpolicy/templates"
)

// MaxMessage is the longest compliance message (event and history), as
// upstream: a longer one keeps its first MaxMessage-14 bytes and ends in
// "...[truncated]".
const MaxMessage = 4096

const truncatedMark = "...[truncated]"

// ComplianceMessage is the text of the compliance event and history entry
// for status st: the default message, or the policy's customMessage for the
// state. The template gets .DefaultMessage and .Policy (the policy with st,
// as a map with its JSON field names); with fullObjects, each
// .Policy.status.relatedObjects[i].object is the whole object on the cluster
// where the evaluation saw it (upstream does so when it watches, i.e. when
// the evaluationInterval of the state is empty or "watch"), otherwise only
// its apiVersion, kind and metadata name and namespace. A template that
// does not parse or fails gives the default message followed by
// " (failure processing the custom message: ...)". The message starts with
// "<State>; " (added when the template's text does not).
func (r *Result) ComplianceMessage(st policyv1.ConfigurationPolicyStatus, fullObjects bool) string {
	return cut(r.customMessage(st, fullObjects))
}

func cut(msg string) string {
	if len(msg) <= MaxMessage {
		return msg
	}
	return msg[:MaxMessage-len(truncatedMark)] + truncatedMark
}

func (r *Result) customMessage(st policyv1.ConfigurationPolicyStatus, fullObjects bool) string {
	state := st.ComplianceState
	def := string(state) + "; " + r.Message()
	text := r.Policy.Spec.CustomMessage.NonCompliant
	if state == policyv1.Compliant {
		text = r.Policy.Spec.CustomMessage.Compliant
	}
	if text == "" {
		return def
	}
	msg, err := r.renderCustom(text, def, st, fullObjects)
	if err != nil {
		return fmt.Sprintf("%s (failure processing the custom message: %v)", def, err)
	}
	if !strings.HasPrefix(msg, string(state)+"; ") {
		msg = string(state) + "; " + msg
	}
	return msg
}

func (r *Result) renderCustom(text, def string, st policyv1.ConfigurationPolicyStatus, fullObjects bool) (string, error) {
	tmpl, err := template.New("custom-msg").Funcs(templates.StringFuncs()).Parse(text)
	if err != nil {
		return "", fmt.Errorf("failed to parse custom template: %w", err)
	}
	p := r.Policy.DeepCopy()
	p.Status = st
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		return "", fmt.Errorf("failed to convert policy to unstructured: %w", err)
	}
	if fullObjects {
		r.attachObjects(m)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, map[string]any{"DefaultMessage": def, "Policy": m}); err != nil {
		return "", fmt.Errorf("failed to execute: %w", err)
	}
	return b.String(), nil
}

// attachObjects replaces each related object's identifiers in the policy map
// with the whole object the evaluation saw.
func (r *Result) attachObjects(m map[string]any) {
	status, _ := m["status"].(map[string]any)
	related, _ := status["relatedObjects"].([]any)
	live := map[string]map[string]any{}
	for _, t := range r.Templates {
		for _, f := range t.Findings {
			if f.Live != nil {
				live[t.Mapping.GVK.GroupVersion().String()+"|"+t.Mapping.GVK.Kind+"|"+f.Namespace+"|"+f.Name] = f.Live.Object
			}
		}
	}
	for _, ro := range related {
		rm, ok := ro.(map[string]any)
		if !ok {
			continue
		}
		obj, _ := rm["object"].(map[string]any)
		md, _ := obj["metadata"].(map[string]any)
		key := fmt.Sprint(obj["apiVersion"], "|", obj["kind"], "|", str(md["namespace"]), "|", str(md["name"]))
		if full, ok := live[key]; ok {
			rm["object"] = full // templates only read
		}
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// UsingWatch reports whether upstream would evaluate p in state s on
// changes (its evaluationInterval for s is empty or "watch"), which is when
// it exposes whole related objects to customMessage.
func UsingWatch(p *policyv1.ConfigurationPolicy, s policyv1.ComplianceState) bool {
	v := p.Spec.EvaluationInterval.NonCompliant
	if s == policyv1.Compliant {
		v = p.Spec.EvaluationInterval.Compliant
	}
	return v == "" || v == "watch"
}
