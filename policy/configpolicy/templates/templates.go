// Package templates resolves the managed-cluster templates of a
// ConfigurationPolicy ({{ ... }} in an objectDefinition, or a whole
// object-templates-raw list) against the cluster, as OCM's
// config-policy-controller does: Go text/template with fromSecret,
// fromConfigMap, fromClusterClaim, lookup, copySecretData,
// copyConfigMapData, base64enc, base64dec, toInt, toBool, indent,
// autoindent, skipObject and the sprig functions upstream offers.
//
// The template is executed on YAML text (an objectDefinition is converted
// from JSON first), so a value written as '{{ ... }}' receives the result in
// place; toInt, toBool, copySecretData and copyConfigMapData put a number,
// a boolean or a map where the quoted template was.
package templates

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	yamlv3 "gopkg.in/yaml.v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Reader reads the cluster for lookups.
type Reader interface {
	// Get returns the object, nil when it does not exist.
	Get(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error)
	// List returns the objects of a kind in namespace ("" every namespace
	// or a cluster-scoped kind).
	List(gvk schema.GroupVersionKind, namespace string) ([]*unstructured.Unstructured, error)
}

// Has reports whether text holds a managed-cluster template.
func Has(text string) bool { return strings.Contains(text, "{{") }

// HasHub reports whether text still holds a hub template ({{hub ... hub}}),
// which the hub should have resolved.
func HasHub(text string) bool { return strings.Contains(text, "{{hub") }

// markers carry typed values through the YAML text.
const (
	markerPrefix = "__flotilla_tmpl_"
	markerInt    = markerPrefix + "int__:"
	markerBool   = markerPrefix + "bool__:"
	markerJSON   = markerPrefix + "json__:"
	// markerSkip marks an object template that called skipObject.
	markerSkip = markerPrefix + "skip__"
)

// Skipped reports whether resolved text (an object template, or its
// objectDefinition) called skipObject.
func Skipped(text string) bool { return strings.Contains(text, markerSkip) }

// Result is a resolved template.
type Result struct {
	// Text is the resolved YAML. An object template in it that called
	// skipObject (with no argument or a true one) holds a marker: see Skipped.
	Text string
}

// Resolve executes text (YAML) against r. Errors are worded as upstream's
// resolver words them, quoting text: `failed to parse the template JSON
// string TEXT: template: tmpl:LINE: ...` and `failed to resolve the template
// TEXT: template: tmpl:LINE:COL: executing "tmpl" at <...>: ...`.
func Resolve(text string, r Reader) (*Result, error) {
	return resolve(text, text, r)
}

// resolve executes text; quoted is the template as the policy holds it, for
// the error messages.
func resolve(text, quoted string, r Reader) (*Result, error) {
	res := &Result{}
	funcs := functions(r)
	// autoindent is rewritten to indent by expandAutoindent where it ends a
	// template on its line; elsewhere it leaves the text as it is.
	funcs["autoindent"] = func(s string) string { return s }
	text = expandAutoindent(text)
	tmpl, err := template.New("tmpl").Option("missingkey=zero").Funcs(funcs).Parse(text)
	if err != nil {
		return nil, &parseError{fmt.Errorf("failed to parse the template JSON string %s: %w", quoted, err)}
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, nil); err != nil {
		return nil, fmt.Errorf("failed to resolve the template %s: %w", quoted, err)
	}
	res.Text = out.String()
	return res, nil
}

// ResolveJSON resolves the templates of a JSON objectDefinition and returns
// the resolved object. As upstream, the template is executed on the
// definition converted to YAML (2-space indents), so the line and column in
// an error point into that YAML, and an error quotes the definition as the
// apiserver stores it (compact JSON, keys sorted).
func ResolveJSON(raw []byte, r Reader) (map[string]any, bool, error) {
	var def any
	if err := json.Unmarshal(raw, &def); err != nil {
		return nil, false, fmt.Errorf("the objectDefinition is not JSON: %w", err)
	}
	quoted, err := json.Marshal(def)
	if err != nil {
		return nil, false, err
	}
	var y bytes.Buffer
	enc := yamlv3.NewEncoder(&y)
	enc.SetIndent(2)
	if err := enc.Encode(def); err != nil {
		return nil, false, fmt.Errorf("failed to convert the policy template to YAML: %w", err)
	}
	res, err := resolve(y.String(), string(quoted), r)
	if err != nil {
		return nil, false, err
	}
	if Skipped(res.Text) {
		return nil, true, nil
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(res.Text), &m); err != nil {
		return nil, false, fmt.Errorf("the resolved template is not valid YAML: %w", err)
	}
	out, err := Typed(m)
	if err != nil {
		return nil, false, err
	}
	return out.(map[string]any), false, nil
}

// Typed replaces the markers toInt, toBool and copy*Data left in string
// values by the values they stand for.
func Typed(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			t, err := Typed(e)
			if err != nil {
				return nil, err
			}
			x[k] = t
		}
		return x, nil
	case []any:
		for i, e := range x {
			t, err := Typed(e)
			if err != nil {
				return nil, err
			}
			x[i] = t
		}
		return x, nil
	case string:
		switch {
		case strings.HasPrefix(x, markerInt):
			return strconv.ParseInt(strings.TrimPrefix(x, markerInt), 10, 64)
		case strings.HasPrefix(x, markerBool):
			return strconv.ParseBool(strings.TrimPrefix(x, markerBool))
		case strings.HasPrefix(x, markerJSON):
			var out any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(x, markerJSON)), &out); err != nil {
				return nil, err
			}
			return out, nil
		}
	}
	return v, nil
}

var autoindentRE = regexp.MustCompile(`(?m)^([ \t-]*)(.*?)\{\{([^{}]*?)\|\s*autoindent\s*\}\}`)

// expandAutoindent turns "| autoindent" into "| indent N" where N is the
// column the template starts at, so a multi-line value lines up under its
// key. (Upstream does the same: autoindent indents by the template's column.)
func expandAutoindent(text string) string {
	return autoindentRE.ReplaceAllStringFunc(text, func(m string) string {
		loc := strings.Index(m, "{{")
		prefix := m[:loc]
		col := len(prefix)
		body := autoindentRE.FindStringSubmatch(m)[3]
		return prefix + "{{" + body + "| indent " + strconv.Itoa(col) + " | trimPrefix \"" + strings.Repeat(" ", col) + "\" }}"
	})
}

// errInvalidInput is upstream's error for a missing argument.
var errInvalidInput = errors.New("the input is invalid")

func functions(r Reader) template.FuncMap {
	// get returns the object, or an error in the apiserver's words
	// (`secrets "x" not found`) when it does not exist.
	get := func(gvk schema.GroupVersionKind, resource, ns, name string) (*unstructured.Unstructured, error) {
		obj, err := r.Get(gvk, ns, name)
		if err != nil {
			return nil, err
		}
		if obj == nil {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: resource}, name)
		}
		return obj, nil
	}
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	configMap := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	claim := schema.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1alpha1", Kind: "ClusterClaim"}
	// getSecret and getConfigMap word their failures as upstream's functions.
	getter := func(gvk schema.GroupVersionKind, resource, failed string) func(ns, name string, args ...string) (*unstructured.Unstructured, error) {
		return func(ns, name string, args ...string) (*unstructured.Unstructured, error) {
			for _, a := range append([]string{ns, name}, args...) {
				if a == "" {
					what := "namespace and name"
					if len(args) > 0 {
						what = "namespace, name, and key"
					}
					return nil, fmt.Errorf("%w: %s must be specified", errInvalidInput, what)
				}
			}
			obj, err := get(gvk, resource, ns, name)
			if err != nil {
				return nil, fmt.Errorf(failed+": %w", name, ns, err)
			}
			return obj, nil
		}
	}
	getSecret := getter(secret, "secrets", "failed to get the secret %s from %s")
	getConfigMap := getter(configMap, "configmaps", "failed getting the ConfigMap %s from %s")
	jsonMarker := func(v any) (string, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		return markerJSON + string(b), nil
	}
	m := template.FuncMap{
		// toLiteral puts its value in place of the quoted template: a string
		// is read as the YAML it holds (upstream removes the quotes around
		// it), so "{}" | toLiteral is an empty map.
		"toLiteral": func(v any) (string, error) {
			if s, ok := v.(string); ok {
				var parsed any
				if err := yaml.Unmarshal([]byte(s), &parsed); err == nil {
					return jsonMarker(parsed)
				}
			}
			return jsonMarker(v)
		},
		"fromSecret": func(ns, name, key string) (string, error) {
			s, err := getSecret(ns, name, key)
			if err != nil {
				return "", err
			}
			v, _, _ := unstructured.NestedString(s.Object, "data", key)
			return v, nil
		},
		"fromConfigMap": func(ns, name, key string) (string, error) {
			cm, err := getConfigMap(ns, name, key)
			if err != nil {
				return "", err
			}
			v, _, _ := unstructured.NestedString(cm.Object, "data", key)
			return v, nil
		},
		"fromClusterClaim": func(name string) (string, error) {
			if name == "" {
				return "", errors.New("a claim name must be provided")
			}
			c, err := get(claim, "clusterclaims", "", name)
			if err != nil {
				return "", err
			}
			v, _, _ := unstructured.NestedString(c.Object, "spec", "value")
			return v, nil
		},
		"lookup": func(apiVersion, kind, ns, name string) (map[string]any, error) {
			gv, err := schema.ParseGroupVersion(apiVersion)
			if err != nil {
				return nil, err
			}
			gvk := gv.WithKind(kind)
			if name == "" {
				list, err := r.List(gvk, ns)
				if err != nil {
					return nil, err
				}
				items := make([]any, 0, len(list))
				for _, o := range list {
					items = append(items, o.Object)
				}
				return map[string]any{"items": items}, nil
			}
			obj, err := r.Get(gvk, ns, name)
			if err != nil {
				return nil, err
			}
			if obj == nil {
				return map[string]any{}, nil
			}
			return obj.Object, nil
		},
		"copySecretData": func(ns, name string) (string, error) {
			s, err := getSecret(ns, name)
			if err != nil {
				return "", err
			}
			d, _, _ := unstructured.NestedMap(s.Object, "data")
			return jsonMarker(d)
		},
		"copyConfigMapData": func(ns, name string) (string, error) {
			cm, err := getConfigMap(ns, name)
			if err != nil {
				return "", err
			}
			d, _, _ := unstructured.NestedMap(cm.Object, "data")
			return jsonMarker(d)
		},
		"toInt": func(v any) (string, error) {
			switch x := v.(type) {
			case int, int64, int32:
				return fmt.Sprintf("%s%d", markerInt, x), nil
			case float64:
				return fmt.Sprintf("%s%d", markerInt, int64(x)), nil
			case string:
				n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
				if err != nil {
					return "", fmt.Errorf("toInt: %q is not an integer", x)
				}
				return fmt.Sprintf("%s%d", markerInt, n), nil
			}
			return "", fmt.Errorf("toInt: %v is not an integer", v)
		},
		"toBool": func(v any) (string, error) {
			switch x := v.(type) {
			case bool:
				return fmt.Sprintf("%s%t", markerBool, x), nil
			case string:
				b, err := strconv.ParseBool(strings.TrimSpace(x))
				if err != nil {
					return "", fmt.Errorf("toBool: %q is not a boolean", x)
				}
				return fmt.Sprintf("%s%t", markerBool, b), nil
			}
			return "", fmt.Errorf("toBool: %v is not a boolean", v)
		},
		"indent": func(n int, s string) string {
			pad := strings.Repeat(" ", n)
			return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
		},
		"skipObject": func(args ...any) (string, error) {
			skip := true
			if len(args) == 1 {
				b, ok := args[0].(bool)
				if !ok {
					return "", fmt.Errorf("skipObject: the argument must be a boolean")
				}
				skip = b
			} else if len(args) > 1 {
				return "", fmt.Errorf("skipObject takes at most one argument")
			}
			if skip {
				return markerSkip, nil
			}
			return "", nil
		},
	}
	for k, v := range StringFuncs() {
		m[k] = v
	}
	return m
}

// sprigFuncs are the functions of the sprig library that upstream's
// templates (go-template-utils) offer, by the same names and with sprig's
// own behaviour (split gives a map {_0: ..., _1: ...}, default treats every
// empty value as missing...).
var sprigFuncs = []string{
	// strings
	"cat", "contains", "hasPrefix", "hasSuffix", "lower", "upper", "quote", "replace",
	"substr", "trim", "trimAll", "trunc",
	"regexFind", "regexFindAll", "regexMatch", "regexQuoteMeta",
	"mustRegexFind", "mustRegexFindAll", "mustRegexMatch",
	// string lists
	"concat", "join", "split", "splitn",
	// integers
	"add", "sub", "mul", "div", "round", "until", "untilStep",
	// dates
	"date", "now", "toDate", "mustToDate",
	// defaults and JSON
	"default", "empty", "ternary", "fromJson", "mustFromJson", "toJson", "mustToJson",
	"toRawJson", "mustToRawJson",
	// lists
	"list", "append", "mustAppend", "prepend", "mustPrepend", "has", "mustHas", "slice", "mustSlice",
	// dicts
	"dict", "dig", "get", "hasKey", "merge", "mustMerge", "set", "unset",
	// flow, versions, security
	"fail", "semver", "semverCompare", "htpasswd",
}

// StringFuncs are the functions that need no cluster: sprigFuncs,
// base64enc/base64dec (and sprig's names b64enc/b64dec for them) and atoi,
// as upstream's; and, Flotilla's own, trimPrefix, trimSuffix and toString.
// customMessage templates get these.
func StringFuncs() template.FuncMap {
	sp := sprig.TxtFuncMap()
	m := template.FuncMap{}
	for _, name := range sprigFuncs {
		m[name] = sp[name]
	}
	for _, name := range []string{"trimPrefix", "trimSuffix", "toString"} {
		m[name] = sp[name]
	}
	enc := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	dec := func(s string) (string, error) {
		b, err := base64.StdEncoding.DecodeString(s)
		return string(b), err
	}
	m["base64enc"], m["b64enc"] = enc, enc
	m["base64dec"], m["b64dec"] = dec, dec
	m["atoi"] = func(s string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return 0, fmt.Errorf("atoi: %q is not an integer", s)
		}
		return n, nil
	}
	return m
}

type parseError struct{ err error }

func (e *parseError) Error() string { return e.err.Error() }
func (e *parseError) Unwrap() error { return e.err }

// IsParseError reports whether err says the template text itself is wrong
// (as opposed to a failure while executing it, such as a missing Secret).
func IsParseError(err error) bool {
	var pe *parseError
	return errors.As(err, &pe)
}
