package manifests

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// Every embedded policy is named flotilla-..., denies, and has exactly one
// binding of the same name; every binding names an embedded policy.
func TestAdmissionPoliciesDecode(t *testing.T) {
	a, err := AdmissionPolicies(HubCRDs, KlusterletCRDs, PolicyCRDs)
	require.NoError(t, err)
	require.NotEmpty(t, a.Policies)
	policies := map[string]bool{}
	for _, p := range a.Policies {
		assert.True(t, strings.HasPrefix(p.Name, AdmissionPrefix), p.Name)
		require.NotNil(t, p.Spec.FailurePolicy, p.Name)
		assert.Equal(t, admissionregistrationv1.Fail, *p.Spec.FailurePolicy, p.Name)
		assert.NotEmpty(t, p.Spec.Validations, p.Name)
		for _, v := range p.Spec.Validations {
			assert.True(t, v.Message != "" || v.MessageExpression != "", "%s: a validation without a message: %s", p.Name, v.Expression)
		}
		policies[p.Name] = true
	}
	bound := map[string]int{}
	for _, b := range a.Bindings {
		assert.Equal(t, b.Spec.PolicyName, b.Name, "a binding is named after its policy")
		assert.True(t, policies[b.Spec.PolicyName], "binding %s names no embedded policy", b.Name)
		assert.Equal(t, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, b.Spec.ValidationActions, b.Name)
		bound[b.Spec.PolicyName]++
	}
	for name := range policies {
		assert.Equal(t, 1, bound[name], "policy %s has %d bindings", name, bound[name])
	}
	probe, ok := admissionProbes[HubCRDs]
	require.True(t, ok)
	assert.Equal(t, 1, bound[probe.refusedBy], "the hub probe waits for a policy that is not embedded")
}

func TestAdmissionPoliciesDecodeErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"kind":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: flotilla-x}\n",
		"prefix": "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: other}\n",
		"field":  "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: flotilla-x}\nspec: {bogus: 1}\n",
	} {
		err := (&Admission{}).decode("x.yaml", []byte(doc))
		assert.ErrorContains(t, err, "x.yaml, document 0", name)
	}
}
