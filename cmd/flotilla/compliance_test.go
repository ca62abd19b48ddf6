package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/test/testenv"
)

// `compliance report` reads a real hub and writes each format; bad flags are
// refused.
func TestComplianceReport(t *testing.T) {
	_, errOut, code := runPolicyCLI(t, "compliance", "report", "-o", "xml", "--kubeconfig", "/does/not/exist")
	require.Equal(t, 1, code)
	_, _, code = runPolicyCLI(t, "compliance", "report", "--by", "policy", "--kubeconfig", "/does/not/exist")
	require.Equal(t, 1, code, errOut)

	env := testenv.Start(t, testenv.Options{})
	kc := env.Hub.KubeconfigPath
	ctx := context.Background()
	c, err := client.New(env.Hub.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "policies"}}))
	tmpl := &policyv1.PolicyTemplate{}
	tmpl.ObjectDefinition.Raw = []byte(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"role-check"},"spec":{"object-templates":[]}}`)
	for _, name := range []string{"policy-role", "unlabelled"} {
		p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "policies", Name: name, Annotations: map[string]string{}},
			Spec: policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{tmpl}}}
		if name == "policy-role" {
			p.Annotations[policyv1.StandardsAnnotation] = "NIST SP 800-53"
			p.Annotations[policyv1.CategoriesAnnotation] = "AC Access Control"
			p.Annotations[policyv1.ControlsAnnotation] = "AC-6 Least Privilege"
		}
		require.NoError(t, c.Create(ctx, p))
		p.Status.Status = []*policyv1.CompliancePerClusterStatus{
			{ClusterName: "east", ClusterNamespace: "east", ComplianceState: policyv1.NonCompliant},
			{ClusterName: "west", ClusterNamespace: "west", ComplianceState: policyv1.Compliant},
		}
		require.NoError(t, c.Status().Update(ctx, p))
	}

	out, errOut, code := runPolicyCLI(t, "compliance", "report", "--kubeconfig", kc)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "AC-6 Least Privilege")
	require.Regexp(t, `AC-6 Least Privilege\s+1\s+1\s+0\s+east`, out)
	require.Contains(t, out, "unmapped")

	out, errOut, code = runPolicyCLI(t, "compliance", "report", "--kubeconfig", kc, "--by", "cluster", "--clusters", "west")
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, out, "east")
	require.Regexp(t, `west\s+2\s+0\s+0`, out)

	out, errOut, code = runPolicyCLI(t, "compliance", "report", "--kubeconfig", kc, "--control", "AC-6", "-o", "csv")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, 3, strings.Count(out, "\n"), "header and one row per cluster:\n%s", out)

	for _, format := range []string{"json", "html"} {
		out, errOut, code = runPolicyCLI(t, "compliance", "report", "--kubeconfig", kc, "-o", format)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "policies/policy-role")
	}
}
