package manifests

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// validators holds one schema validator per served GroupVersionKind of every
// embedded CRD, built on first use.
var validators struct {
	once  sync.Once
	byGVK map[schema.GroupVersionKind]validation.SchemaValidator
	err   error
}

// Validate checks obj against the OpenAPI schema of its embedded CRD (types,
// enums, patterns, bounds), as the apiserver would at create, for readers that
// never reach an apiserver (for example `flotilla policy dryrun`). The error
// lists every problem with its field path, sorted, separated by "; ", e.g.
// `spec.remediationAction: Unsupported value: "destroy": supported values: ...`;
// the caller names the object.
// An object of a kind no embedded CRD defines is not checked. CEL rules
// (x-kubernetes-validations) and admission policies are not evaluated.
func Validate(obj *unstructured.Unstructured) error {
	validators.once.Do(func() {
		validators.byGVK, validators.err = buildValidators()
	})
	if validators.err != nil {
		return validators.err
	}
	v, ok := validators.byGVK[obj.GroupVersionKind()]
	if !ok {
		return nil
	}
	errs := validation.ValidateCustomResource(nil, obj.UnstructuredContent(), v)
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	sort.Strings(msgs) // the schema walk visits properties in map order
	return errors.New(strings.Join(msgs, "; "))
}

func buildValidators() (map[schema.GroupVersionKind]validation.SchemaValidator, error) {
	crds, err := CRDs(HubCRDs, KlusterletCRDs, PolicyCRDs, FlotillaCRDs)
	if err != nil {
		return nil, err
	}
	out := map[schema.GroupVersionKind]validation.SchemaValidator{}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			internal := &apiextensions.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
				return nil, fmt.Errorf("CRD %s %s: %w", crd.Name, v.Name, err)
			}
			validator, _, err := validation.NewSchemaValidator(internal)
			if err != nil {
				return nil, fmt.Errorf("CRD %s %s: %w", crd.Name, v.Name, err)
			}
			out[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = validator
		}
	}
	return out, nil
}
