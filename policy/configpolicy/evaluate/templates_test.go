package evaluate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// Template failures carry upstream's condition reason; a parse error or a
// hub template waits for the policy to change, a failed lookup is retried.
func TestTemplateErrorReasons(t *testing.T) {
	for _, tc := range []struct {
		name, policy, reason string
		retry                bool
	}{
		{"hub template", `
metadata: {name: p}
spec:
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: '{{hub .ManagedClusterName hub}}', namespace: default}}
`, ReasonHubTemplate, false},
		{"hub template in object-templates-raw", `
metadata: {name: p}
spec:
  object-templates-raw: '{{hub "x" hub}}'
`, ReasonHubTemplate, false},
		{"parse error", `
metadata: {name: p}
spec:
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: '{{ nope }}', namespace: default}}
`, ReasonTemplateError, false},
		{"missing ConfigMap", `
metadata: {name: p}
spec:
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: default}, data: {a: '{{ fromConfigMap "default" "none" "k" }}'}}
`, ReasonTemplateError, true},
		{"raw not YAML", `
metadata: {name: p}
spec:
  object-templates-raw: "- a: [b"
`, ReasonTemplateError, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Policy(policy(t, tc.policy), objects(t, `{apiVersion: v1, kind: Namespace, metadata: {name: default}}`))
			st := res.Status(nil, time.Unix(0, 0))
			require.Equal(t, policyv1.NonCompliant, st.ComplianceState)
			require.Len(t, st.CompliancyDetails, 1, "the failure is the policy's or the template's only condition")
			require.Equal(t, tc.reason, st.CompliancyDetails[0].Conditions[0].Reason)
			require.Equal(t, tc.retry, res.Retryable())
		})
	}
}

// What templates read is recorded (existing or not, objects and lists), so
// the engine re-evaluates the policy when it changes; what the templates
// evaluate (the governed ConfigMap itself) is not a template read.
func TestTemplateReads(t *testing.T) {
	p := policy(t, `
metadata: {name: p}
spec:
  object-templates-raw: |
    {{- range (lookup "v1" "ConfigMap" "apps" "").items }}
    - complianceType: musthave
      objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: '{{ .metadata.name }}-copy', namespace: apps},
        data: {v: '{{ fromSecret "vault" "db" "password" }}', w: '{{ fromConfigMap "apps" "absent" "k" | default "x" }}'}}
    {{- end }}
`)
	res := Policy(p, objects(t,
		`{apiVersion: v1, kind: Namespace, metadata: {name: apps}}`,
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: apps}}`,
		`{apiVersion: v1, kind: Secret, metadata: {name: db, namespace: vault}, data: {password: cGFzcw==}}`))
	require.Equal(t, []Read{
		{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "apps"},
		{Resource: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Namespace: "vault", Name: "db"},
		{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "apps", Name: "absent"},
	}, res.TemplateReads)

	res = Policy(policy(t, `
metadata: {name: p}
spec:
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: apps}}
`), objects(t, `{apiVersion: v1, kind: Namespace, metadata: {name: apps}}`))
	require.Empty(t, res.TemplateReads)
}
