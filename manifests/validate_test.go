package manifests

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Validate refuses offline what the CRD schema refuses on a cluster, naming
// the field (the same cases run on a real apiserver in test/admission).
func TestValidate(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"remediationAction destroy", "spec: {remediationAction: destroy}", `spec.remediationAction: Unsupported value: "destroy"`},
		{"severity urgent", "spec: {severity: urgent}", "spec.severity"},
		{"complianceType", "spec: {object-templates: [{complianceType: mayhave, objectDefinition: {kind: Namespace}}]}", "spec.object-templates[0].complianceType"},
		{"recordDiff", "spec: {object-templates: [{complianceType: musthave, recordDiff: Always, objectDefinition: {kind: Namespace}}]}", "recordDiff"},
		{"evaluationInterval", "spec: {evaluationInterval: {compliant: 1x5m}}", "spec.evaluationInterval.compliant"},
		{"missing objectDefinition", "spec: {object-templates: [{complianceType: musthave}]}", "objectDefinition"},
		{"good", "spec: {remediationAction: enforce, severity: High, evaluationInterval: {compliant: 10m}, object-templates: [{complianceType: MustHave, objectDefinition: {kind: Namespace}}]}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte("apiVersion: policy.open-cluster-management.io/v1\nkind: ConfigurationPolicy\nmetadata: {name: p}\n"+tc.doc), &u.Object))
			err := Validate(u)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": 5}}
	assert.NoError(t, Validate(other), "kinds without an embedded CRD are not checked")
}
