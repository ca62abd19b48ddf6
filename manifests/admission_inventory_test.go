package manifests_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/manifests"
)

// A narrow field is one whose Go type admits less than what a CRD's
// `type: integer` or `type: string` admits, so that a stored value could fail
// to decode: int32, int-or-string (its number is an int32), durations,
// quantities, times. int64 and int need nothing: the apiserver refuses any
// integer outside int64 (TestInt64FieldsBoundedByTheAPIServer).
type narrowField struct {
	path string // e.g. spec.tolerations[].tolerationSeconds, status.capacity{}
	kind string
}

var (
	intOrStringType = reflect.TypeOf(intstr.IntOrString{})
	durationType    = reflect.TypeOf(metav1.Duration{})
	quantityType    = reflect.TypeOf(resource.Quantity{})
	timeType        = reflect.TypeOf(metav1.Time{})
	microTimeType   = reflect.TypeOf(metav1.MicroTime{})
	skipTypes       = map[reflect.Type]bool{
		reflect.TypeOf(metav1.TypeMeta{}):      true, // the apiserver's own
		reflect.TypeOf(metav1.ObjectMeta{}):    true,
		reflect.TypeOf(metav1.ListMeta{}):      true,
		reflect.TypeOf(runtime.RawExtension{}): true, // opaque bytes
	}
)

// narrowFields lists the narrow fields of a Go type by JSON path.
func narrowFields(t reflect.Type, path string, stack map[reflect.Type]bool, out *[]narrowField) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case skipTypes[t]:
		return
	case t == intOrStringType:
		*out = append(*out, narrowField{path, "int-or-string"})
		return
	case t == durationType:
		*out = append(*out, narrowField{path, "duration"})
		return
	case t == quantityType:
		*out = append(*out, narrowField{path, "quantity"})
		return
	case t == timeType || t == microTimeType:
		*out = append(*out, narrowField{path, "time"})
		return
	}
	switch t.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32:
		*out = append(*out, narrowField{path, t.Kind().String()})
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return // []byte: base64, `format: byte` in the schema
		}
		narrowFields(t.Elem(), path+"[]", stack, out)
	case reflect.Map:
		narrowFields(t.Elem(), path+"{}", stack, out)
	case reflect.Struct:
		if stack[t] {
			return
		}
		stack[t] = true
		defer delete(stack, t)
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if name == "-" {
				continue
			}
			p := path
			if !(f.Anonymous && name == "") && !strings.Contains(","+opts+",", ",inline,") {
				if name == "" {
					name = f.Name
				}
				if p != "" {
					p += "."
				}
				p += name
			}
			narrowFields(f.Type, p, stack, out)
		}
	}
}

// schemaAt walks a CRD schema along a path; nil when the schema has no such
// field (the apiserver prunes it, so it is never stored).
func schemaAt(s *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	for _, seg := range strings.Split(path, ".") {
		name := strings.TrimRight(seg, "[]{}")
		suffix := seg[len(name):]
		next, ok := s.Properties[name]
		if !ok {
			return nil
		}
		s = &next
		for ; suffix != ""; suffix = suffix[2:] {
			switch suffix[:2] {
			case "[]":
				if s.Items == nil || s.Items.Schema == nil {
					return nil
				}
				s = s.Items.Schema
			case "{}":
				if s.AdditionalProperties == nil || s.AdditionalProperties.Schema == nil {
					return nil
				}
				s = s.AdditionalProperties.Schema
			}
		}
	}
	return s
}

// boundedBySchema reports whether the CRD schema alone keeps f decodable.
func boundedBySchema(f narrowField, s *apiextensionsv1.JSONSchemaProps) bool {
	switch f.kind {
	case "time":
		return s.Format == "date-time"
	case "int32":
		return s.Minimum != nil && s.Maximum != nil && *s.Minimum >= math.MinInt32 && *s.Maximum <= math.MaxInt32
	}
	return false
}

// Every narrow field of every kind of every embedded CRD, in every served
// version, is bounded: by its CRD schema, or by the admission policy named after
// its resource (flotilla-<plural>, flotilla-<plural>-status for status fields)
// with an expression that names the field. A new OCM API version that adds an
// int32 field fails here until a policy bounds it.
func TestEveryNarrowFieldIsBounded(t *testing.T) {
	s := scheme.New()
	require.NoError(t, policyv1.AddToScheme(s))
	crds, err := manifests.CRDs(manifests.HubCRDs, manifests.KlusterletCRDs, manifests.PolicyCRDs, manifests.FlotillaCRDs)
	require.NoError(t, err)
	a, err := manifests.AdmissionPolicies(manifests.HubCRDs, manifests.KlusterletCRDs, manifests.PolicyCRDs, manifests.FlotillaCRDs)
	require.NoError(t, err)
	policies := map[string]*admissionregistrationv1.ValidatingAdmissionPolicy{}
	for _, p := range a.Policies {
		policies[p.Name] = p
	}

	covered := 0
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			obj, err := s.New(gvk)
			require.NoError(t, err, "no Go type for %s", gvk)
			var fields []narrowField
			narrowFields(reflect.TypeOf(obj), "", map[reflect.Type]bool{}, &fields)
			for _, f := range fields {
				sch := schemaAt(v.Schema.OpenAPIV3Schema, f.path)
				switch {
				case sch == nil:
					t.Logf("%s %s (%s): not in the schema, never stored", gvk.Kind, f.path, f.kind)
					continue
				case boundedBySchema(f, sch):
					t.Logf("%s %s (%s): bounded by the CRD schema", gvk.Kind, f.path, f.kind)
					continue
				}
				resource := crd.Spec.Names.Plural
				name := manifests.AdmissionPrefix + resource
				if strings.HasPrefix(f.path, "status.") {
					resource += "/status"
					name += "-status"
				}
				p := policies[name]
				if !assert.NotNil(t, p, "%s %s (%s) is bounded neither by its CRD schema nor by a policy: add ValidatingAdmissionPolicy %s to manifests/admission",
					gvk.Kind, f.path, f.kind, name) {
					continue
				}
				assert.True(t, matches(p, crd.Spec.Group, v.Name, resource), "policy %s does not match %s %s/%s", name, resource, crd.Spec.Group, v.Name)
				leaf := f.path[strings.LastIndex(f.path, ".")+1:]
				leaf = strings.TrimRight(leaf, "[]{}")
				found := false
				for _, val := range p.Spec.Validations {
					found = found || strings.Contains(val.Expression, "."+leaf)
				}
				if assert.True(t, found, "policy %s has no expression on %s (%s %s)", name, leaf, gvk.Kind, f.path) {
					t.Logf("%s %s (%s): bounded by %s", gvk.Kind, f.path, f.kind, name)
					covered++
				}
			}
		}
	}
	assert.Greater(t, covered, 10, "the walk found the fields the policies bound")
}

func matches(p *admissionregistrationv1.ValidatingAdmissionPolicy, group, version, resource string) bool {
	if p.Spec.MatchConstraints == nil {
		return false
	}
	for _, r := range p.Spec.MatchConstraints.ResourceRules {
		if contains(r.APIGroups, group) && contains(r.APIVersions, version) && contains(r.Resources, resource) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s || x == "*" {
			return true
		}
	}
	return false
}
