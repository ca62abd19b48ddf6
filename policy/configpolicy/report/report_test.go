package report

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

func fixture() []policyv1.ConfigurationPolicy {
	p := policyv1.ConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "need-prod", Namespace: "policies"}}
	p.Spec.RemediationAction = "Enforce"
	p.Status.ComplianceState = policyv1.Compliant
	p.Status.CompliancyDetails = []policyv1.TemplateStatus{{ComplianceState: policyv1.Compliant,
		Conditions: []policyv1.Condition{{Type: "notification", Message: "namespaces [prod] found as specified"}}}}
	p.Status.History = []policyv1.ComplianceHistory{
		{LastTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)), Message: "Compliant; notification - namespaces [prod] was created successfully"},
		{LastTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), Message: "NonCompliant; violation - namespaces [prod] not found"},
	}
	fresh := policyv1.ConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: "policies"}}
	fresh.Spec.RemediationAction = "inform"
	return []policyv1.ConfigurationPolicy{p, fresh}
}

func TestTable(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, Print(&buf, fixture(), "table", true))
	require.Equal(t, `NAMESPACE  NAME       REMEDIATION  COMPLIANCE  MESSAGE
policies   need-prod  enforce      Compliant   notification - namespaces [prod] found as specified
                                                 2026-01-01T00:01:00Z  Compliant; notification - namespaces [prod] was created successfully
                                                 2026-01-01T00:00:00Z  NonCompliant; violation - namespaces [prod] not found
policies   fresh      inform       -           -
`, buf.String())
}

func TestYAMLAndJSON(t *testing.T) {
	for _, f := range []string{"yaml", "json"} {
		var buf bytes.Buffer
		require.NoError(t, Print(&buf, fixture(), f, false))
		var back struct {
			Kind  string                         `json:"kind"`
			Items []policyv1.ConfigurationPolicy `json:"items"`
		}
		if f == "json" {
			require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
		} else {
			require.NoError(t, yaml.Unmarshal(buf.Bytes(), &back))
		}
		require.Equal(t, "List", back.Kind)
		require.Len(t, back.Items, 2)
		require.Equal(t, "ConfigurationPolicy", back.Items[0].Kind)
		require.Equal(t, policyv1.Compliant, back.Items[0].Status.ComplianceState)
	}
	require.Error(t, Print(&bytes.Buffer{}, nil, "xml", false))
}
