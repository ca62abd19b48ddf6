package dryrun

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzReadPolicies reads arbitrary policy files (YAML or JSON, one or more
// documents). It never panics; what it accepts is at least one
// ConfigurationPolicy with a remediation action, and what it refuses comes
// with an error naming the input.
func FuzzReadPolicies(f *testing.F) {
	f.Add([]byte("apiVersion: policy.open-cluster-management.io/v1\nkind: ConfigurationPolicy\nmetadata: {name: p}\nspec:\n  object-templates:\n  - complianceType: musthave\n    objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: prod}}\n"))
	f.Add([]byte("apiVersion: policy.open-cluster-management.io/v1\nkind: Policy\nmetadata: {name: p, namespace: n}\nspec:\n  remediationAction: enforce\n  policy-templates:\n  - objectDefinition: {apiVersion: policy.open-cluster-management.io/v1, kind: ConfigurationPolicy, metadata: {name: c}, spec: {}}\n  - objectDefinition: {kind: 7}\n  - 3\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("kind: ConfigurationPolicy\nspec: {object-templates: 5}\n"))
	f.Add([]byte(`{"kind":"ConfigurationPolicy","metadata":{"name":"x"},"spec":{"remediationAction":"destroy","severity":{}}}`))
	f.Add([]byte("a: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		policies, _, err := ReadPolicies(bytes.NewReader(data), "-")
		if err != nil {
			if !strings.Contains(err.Error(), "-") {
				t.Fatalf("error %q does not name the input", err)
			}
			return
		}
		if len(policies) == 0 {
			t.Fatal("no error and no policy")
		}
		for _, p := range policies {
			if p.Spec.RemediationAction == "" {
				t.Fatalf("policy %q has no remediation action", p.Name)
			}
		}
	})
}

// FuzzReadObjects reads arbitrary object files: never a panic, and every
// object it returns has a kind.
func FuzzReadObjects(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Secret, metadata: {name: s}}]\n"))
	f.Add([]byte("kind: List\nitems: 5\n"))
	f.Add([]byte("- 1\n- 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := ReadObjects(bytes.NewReader(data), "-")
		if err != nil {
			return
		}
		for _, o := range objs {
			if o.GetKind() == "" {
				t.Fatalf("object without a kind: %v", o.Object)
			}
		}
	})
}
