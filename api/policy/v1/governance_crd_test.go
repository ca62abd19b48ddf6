package v1_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/manifests"
)

func governanceCRD(t *testing.T, kind string) apiextensionsv1.CustomResourceDefinitionVersion {
	t.Helper()
	crds, err := manifests.CRDs(manifests.PolicyCRDs)
	require.NoError(t, err)
	for _, crd := range crds {
		if crd.Spec.Names.Kind == kind {
			require.Equal(t, policyv1.GroupName, crd.Spec.Group)
			require.Len(t, crd.Spec.Versions, 1)
			require.NotNil(t, crd.Spec.Versions[0].Subresources.Status)
			return crd.Spec.Versions[0]
		}
	}
	t.Fatalf("no %s CRD in manifests/crds/policy", kind)
	return apiextensionsv1.CustomResourceDefinitionVersion{}
}

func enum(p apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	for _, e := range p.Enum {
		out = append(out, string(e.Raw))
	}
	return out
}

// The Policy CRD has OCM's wire names, printer columns and enums.
func TestPolicyCRD(t *testing.T) {
	v := governanceCRD(t, "Policy")
	require.Equal(t, "v1", v.Name)
	var cols []string
	for _, c := range v.AdditionalPrinterColumns {
		cols = append(cols, c.Name)
	}
	require.Equal(t, []string{"Remediation action", "Compliance state", "Age"}, cols)
	spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
	for _, f := range []string{"disabled", "remediationAction", "copyPolicyMetadata", "policy-templates", "dependencies", "hubTemplateOptions"} {
		require.Contains(t, spec.Properties, f)
	}
	require.ElementsMatch(t, []string{`"Inform"`, `"inform"`, `"Enforce"`, `"enforce"`}, enum(spec.Properties["remediationAction"]))
	tmpl := spec.Properties["policy-templates"].Items.Schema
	for _, f := range []string{"objectDefinition", "extraDependencies", "ignorePending"} {
		require.Contains(t, tmpl.Properties, f)
	}
	require.NotNil(t, tmpl.Properties["objectDefinition"].XPreserveUnknownFields)
	require.Equal(t, []string{"compliance", "name"}, spec.Properties["dependencies"].Items.Schema.Required)

	status := v.Schema.OpenAPIV3Schema.Properties["status"]
	for _, f := range []string{"placement", "status", "compliant", "details"} {
		require.Contains(t, status.Properties, f)
	}
	perCluster := status.Properties["status"].Items.Schema
	for _, f := range []string{"clustername", "clusternamespace", "compliant"} {
		require.Contains(t, perCluster.Properties, f)
	}
	details := status.Properties["details"].Items.Schema
	require.Contains(t, details.Properties, "templateMeta")
	for _, f := range []string{"lastTimestamp", "message", "eventName"} {
		require.Contains(t, details.Properties["history"].Items.Schema.Properties, f)
	}
	placement := status.Properties["placement"].Items.Schema
	for _, f := range []string{"placementBinding", "placement", "policySet", "decisions"} {
		require.Contains(t, placement.Properties, f)
	}
}

func TestPlacementBindingCRD(t *testing.T) {
	v := governanceCRD(t, "PlacementBinding")
	s := v.Schema.OpenAPIV3Schema
	require.ElementsMatch(t, []string{"placementRef", "subjects"}, s.Required)
	require.Equal(t, []string{`"restricted"`}, enum(s.Properties["subFilter"]))
	require.ElementsMatch(t, []string{`"Enforce"`, `"enforce"`}, enum(s.Properties["bindingOverrides"].Properties["remediationAction"]))
	subj := s.Properties["subjects"]
	require.EqualValues(t, 1, *subj.MinItems)
	require.ElementsMatch(t, []string{`"Policy"`, `"PolicySet"`}, enum(subj.Items.Schema.Properties["kind"]))
	require.ElementsMatch(t, []string{`"Placement"`, `"PlacementRule"`}, enum(s.Properties["placementRef"].Properties["kind"]))
}

func TestPolicySetCRD(t *testing.T) {
	v := governanceCRD(t, "PolicySet")
	require.Equal(t, "v1beta1", v.Name)
	s := v.Schema.OpenAPIV3Schema
	require.Contains(t, s.Properties["spec"].Properties, "policies")
	require.EqualValues(t, 1, *s.Properties["spec"].Properties["policies"].Items.Schema.MinLength)
	for _, f := range []string{"placement", "compliant", "statusMessage"} {
		require.Contains(t, s.Properties["status"].Properties, f)
	}
}
