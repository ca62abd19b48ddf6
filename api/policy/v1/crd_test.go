package v1_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/manifests"
)

// The generated CRD is embedded, matches the Go types' group and carries the
// validation the engine relies on.
func TestConfigurationPolicyCRD(t *testing.T) {
	crds, err := manifests.CRDs(manifests.PolicyCRDs)
	require.NoError(t, err)
	var found bool
	for _, crd := range crds {
		if crd.Spec.Names.Kind != "ConfigurationPolicy" {
			continue
		}
		found = true
		require.Equal(t, policyv1.GroupName, crd.Spec.Group)
		v := crd.Spec.Versions[0]
		require.Equal(t, "v1", v.Name)
		require.NotNil(t, v.Subresources.Status)
		spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
		require.Len(t, spec.Properties["remediationAction"].Enum, 4)
		require.JSONEq(t, `"inform"`, string(spec.Properties["remediationAction"].Default.Raw))
		require.JSONEq(t, `"None"`, string(spec.Properties["pruneObjectBehavior"].Default.Raw))
		tmpl := spec.Properties["object-templates"].Items.Schema
		require.Len(t, tmpl.Properties["complianceType"].Enum, 9)
		require.ElementsMatch(t, []string{"complianceType", "objectDefinition"}, tmpl.Required)
		od := tmpl.Properties["objectDefinition"]
		require.NotNil(t, od.XPreserveUnknownFields)
		var cols []string
		for _, c := range v.AdditionalPrinterColumns {
			cols = append(cols, c.Name)
		}
		require.Equal(t, []string{"Remediation", "Compliance", "Severity", "Age"}, cols)
	}
	require.True(t, found, "no ConfigurationPolicy CRD in manifests/crds/policy")
}

func TestComplianceTypeNormalize(t *testing.T) {
	for in, want := range map[string]policyv1.ComplianceType{
		"musthave": policyv1.MustHave, "MustOnlyHave": policyv1.MustOnlyHave,
		"Mustnothave": policyv1.MustNotHave, "bogus": "bogus",
	} {
		require.Equal(t, want, policyv1.ComplianceType(in).Normalize(), in)
	}
	require.True(t, policyv1.RemediationAction("enforce").IsEnforce())
	require.False(t, policyv1.RemediationAction("inform").IsEnforce())
}
