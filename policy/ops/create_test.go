package ops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

const twoPolicies = `apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata:
  name: ns-prod
spec:
  remediationAction: inform
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: prod}}
---
# a comment-only document is skipped
---
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata:
  name: ns-dev
spec:
  object-templates: []
`

func TestBuild(t *testing.T) {
	out, err := Build(CreateOptions{Name: "policy-ns", Namespace: "gov", Standards: []string{"NIST SP 800-53"},
		Categories: []string{"CM Configuration Management"}, Controls: []string{"CM-2 Baseline Configuration", "CM-6"},
		RemediationAction: "Enforce", Placement: "all", File: "ns.yaml"}, []byte(twoPolicies))
	require.NoError(t, err)
	p := out.Policy
	assert.Equal(t, "policy-ns", p.Name)
	assert.Equal(t, "gov", p.Namespace)
	assert.Equal(t, map[string]string{policyv1.StandardsAnnotation: "NIST SP 800-53", policyv1.CategoriesAnnotation: "CM Configuration Management",
		policyv1.ControlsAnnotation: "CM-2 Baseline Configuration,CM-6"}, p.Annotations)
	assert.Equal(t, policyv1.RemediationAction("enforce"), p.Spec.RemediationAction)
	require.Len(t, p.Spec.PolicyTemplates, 2)
	assert.Contains(t, string(p.Spec.PolicyTemplates[0].ObjectDefinition.Raw), `"name":"ns-prod"`)
	require.NotNil(t, out.Binding)
	assert.Equal(t, "binding-policy-ns", out.Binding.Name)
	assert.Equal(t, policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: "all"}, out.Binding.PlacementRef)
	assert.Equal(t, []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: "policy-ns"}}, out.Binding.Subjects)

	out, err = Build(CreateOptions{Name: "p", File: "f"}, []byte(twoPolicies))
	require.NoError(t, err)
	assert.Nil(t, out.Binding, "no --placement: no binding")
	assert.Equal(t, "default", out.Policy.Namespace)
}

func TestBuildRefuses(t *testing.T) {
	tests := []struct {
		name    string
		opts    CreateOptions
		content string
		err     string
	}{
		{"no name", CreateOptions{File: "f"}, twoPolicies, "a policy name is required"},
		{"not a ConfigurationPolicy", CreateOptions{Name: "p", File: "f.yaml"}, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
			`f.yaml: document 1 is a ConfigMap "v1", not a policy.open-cluster-management.io ConfigurationPolicy, CertificatePolicy or OperatorPolicy`},
		{"no metadata.name", CreateOptions{Name: "p", File: "f.yaml"}, "apiVersion: policy.open-cluster-management.io/v1\nkind: ConfigurationPolicy\n",
			"f.yaml: document 1: the ConfigurationPolicy has no metadata.name"},
		{"empty file", CreateOptions{Name: "p", File: "f.yaml"}, "# nothing\n", "f.yaml holds no ConfigurationPolicy, CertificatePolicy or OperatorPolicy"},
		{"bad YAML", CreateOptions{Name: "p", File: "f.yaml"}, "kind: [", "f.yaml: document 1:"},
		{"bad remediation", CreateOptions{Name: "p", File: "f", RemediationAction: "maybe"}, twoPolicies, `--remediation-action "maybe"`},
		{"name too long", CreateOptions{Name: strings.Repeat("x", 60), Namespace: "gov", File: "f"}, twoPolicies, "replicas need at most 63"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.opts, []byte(tc.content))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

func TestReadFileLimit(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, make([]byte, MaxFileSize+1), 0o600))
	_, err := ReadFile(big, nil)
	assert.ErrorContains(t, err, "is larger than 4 MiB")
	data, err := ReadFile("-", strings.NewReader(twoPolicies))
	require.NoError(t, err)
	assert.Equal(t, twoPolicies, string(data))
	_, err = ReadFile(filepath.Join(dir, "missing.yaml"), nil)
	assert.ErrorContains(t, err, "no such file")
}

func TestDescribing(t *testing.T) {
	root := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "gov"}}
	root.Status.Status = []*policyv1.CompliancePerClusterStatus{
		{ClusterName: "c1", ClusterNamespace: "c1", ComplianceState: policyv1.NonCompliant},
		{ClusterName: "c2", ClusterNamespace: "c2"},
	}
	rep := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "gov.p", Namespace: "c1"}}
	rep.Status.Details = []*policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: "ns-prod"}, ComplianceState: policyv1.NonCompliant,
		History: []policyv1.ComplianceHistory{
			{Message: "NonCompliant; violation - namespaces [prod] not found", LastTimestamp: metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
			{Message: "Compliant; older"}}}}
	d := Describing(root, []policyv1.Policy{rep})
	assert.Equal(t, []ClusterDetail{
		{Cluster: "c1", Compliant: policyv1.NonCompliant, Templates: []TemplateDetail{{Name: "ns-prod", Compliant: policyv1.NonCompliant,
			LastMessage: "NonCompliant; violation - namespaces [prod] not found", LastTime: "2026-01-02T03:04:05Z"}}},
		{Cluster: "c2"},
	}, d.Clusters)
}
