package manifests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestKeepConversion(t *testing.T) {
	webhook := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
	none := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	two := []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true}, {Name: "v1beta1", Served: true}}
	one := []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true}}
	crd := func(c *apiextensionsv1.CustomResourceConversion, v []apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Conversion: c, Versions: v}}
	}
	tests := []struct {
		name           string
		existing, want *apiextensionsv1.CustomResourceDefinition
		keep           bool
	}{
		{"the hub's webhook survives init again", crd(webhook, two), crd(nil, two), true},
		{"also over an explicit None", crd(webhook, two), crd(none, two), true},
		{"nothing to keep", crd(none, two), crd(nil, two), false},
		{"no conversion at all", crd(nil, two), crd(nil, two), false},
		{"one served version needs no webhook", crd(webhook, two), crd(nil, one), false},
		{"a webhook of the new CRD wins", crd(webhook, two), crd(webhook, two), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.keep, keepConversion(tt.existing, tt.want))
		})
	}
}
