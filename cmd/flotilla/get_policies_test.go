package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/ops"
)

func testPolicies() []policyv1.Policy {
	nist := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "policy-namespace", Namespace: "gov",
		Annotations: map[string]string{policyv1.StandardsAnnotation: "NIST SP 800-53", policyv1.ControlsAnnotation: "CM-2 Baseline Configuration"}},
		Spec: policyv1.PolicySpec{RemediationAction: "inform"}}
	nist.Status = policyv1.PolicyStatus{ComplianceState: policyv1.NonCompliant,
		Placement: []*policyv1.Placement{{PlacementBinding: "binding-policy-namespace", Placement: "all"},
			{PlacementBinding: "baseline", Placement: "prod", PolicySet: "baseline"}},
		Status: []*policyv1.CompliancePerClusterStatus{
			{ClusterName: "cluster1", ClusterNamespace: "cluster1", ComplianceState: policyv1.Compliant},
			{ClusterName: "cluster2", ClusterNamespace: "cluster2", ComplianceState: policyv1.NonCompliant}}}
	off := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "off", Namespace: "gov"}, Spec: policyv1.PolicySpec{Disabled: true}}
	return []policyv1.Policy{nist, off}
}

func TestPrintPoliciesTable(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, printPolicies(&out, "table", testPolicies(), false))
	assert.Equal(t, ""+
		"NAMESPACE   NAME               REMEDIATION ACTION   COMPLIANCE STATE   CLUSTERS\n"+
		"gov         policy-namespace   inform               NonCompliant       1/2 compliant\n"+
		"gov         off                <per template>       Disabled           0/0 compliant\n", out.String())

	out.Reset()
	require.NoError(t, printPolicies(&out, "table", testPolicies(), true))
	assert.Equal(t, ""+
		"NAMESPACE   NAME               CLUSTER    COMPLIANCE STATE\n"+
		"gov         policy-namespace   cluster1   Compliant\n"+
		"gov         policy-namespace   cluster2   NonCompliant\n", out.String())
}

func TestPrintPoliciesJSONAndYAML(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		var out bytes.Buffer
		require.NoError(t, printPolicies(&out, format, testPolicies()[:1], false))
		raw := out.Bytes()
		if format == "yaml" {
			var err error
			raw, err = yaml.YAMLToJSON(raw)
			require.NoError(t, err)
		}
		var got struct {
			Kind  string            `json:"kind"`
			Items []policyv1.Policy `json:"items"`
		}
		require.NoError(t, json.Unmarshal(raw, &got), format)
		assert.Equal(t, "List", got.Kind)
		require.Len(t, got.Items, 1)
		assert.Equal(t, policyv1.NonCompliant, got.Items[0].Status.ComplianceState)
		assert.Len(t, got.Items[0].Status.Status, 2)
	}
}

func TestPrintPolicyDescription(t *testing.T) {
	p := testPolicies()[0]
	rep := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "gov.policy-namespace", Namespace: "cluster2"}}
	rep.Status.Details = []*policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: "ns-prod"}, ComplianceState: policyv1.NonCompliant,
		History: []policyv1.ComplianceHistory{{Message: "NonCompliant; violation - namespaces [prod] not found",
			LastTimestamp: metav1.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)}}}}
	d := ops.Describing(&p, []policyv1.Policy{rep})
	var out bytes.Buffer
	require.NoError(t, printPolicyDescription(&out, "table", d))
	assert.Equal(t, ""+
		"Name:                policy-namespace\n"+
		"Namespace:           gov\n"+
		"Standards:           NIST SP 800-53\n"+
		"Controls:            CM-2 Baseline Configuration\n"+
		"Remediation action:  inform\n"+
		"Disabled:            false\n"+
		"Compliance state:    NonCompliant\n"+
		"Placement:\n"+
		"  PlacementBinding binding-policy-namespace -> Placement all\n"+
		"  PlacementBinding baseline -> Placement prod (through PolicySet baseline)\n"+
		"Clusters:\n"+
		"  cluster1: Compliant\n"+
		"  cluster2: NonCompliant\n"+
		"    ns-prod: NonCompliant (2026-11-24T09:00:00Z) NonCompliant; violation - namespaces [prod] not found\n", out.String())

	out.Reset()
	require.NoError(t, printPolicyDescription(&out, "json", d))
	var got ops.Description
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	assert.Equal(t, d.Clusters, got.Clusters)
}
