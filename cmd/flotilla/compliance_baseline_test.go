package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/defenseunicorns/go-oscal/src/pkg/validation"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/test/testenv"
)

// `compliance report --baseline` and `-o oscal` on a real hub; a bad profile
// is refused before the hub is asked anything.
func TestComplianceReportBaseline(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"profile": {"imports": [{"href": "#x", "include-controls": [{"with-ids": ["ac-6", "zz-1"]}]}]}}`), 0o644))
	err := cliError(t, "compliance", "report", "--baseline", bad, "--kubeconfig", "/does/not/exist")
	require.ErrorContains(t, err, `OSCAL profile `+bad+`: profile.imports[0].include-controls[0].with-ids[1]: "zz-1" is not a control of NIST SP 800-53 rev5`)
	err = cliError(t, "compliance", "report", "--baseline", "medium", "--kubeconfig", "/does/not/exist")
	require.ErrorContains(t, err, `baseline "medium" is not one of low, moderate, high, privacy`)

	env := testenv.Start(t, testenv.Options{})
	kc := env.Hub.KubeconfigPath
	ctx := context.Background()
	c, err := client.New(env.Hub.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "policies"}}))
	tmpl := &policyv1.PolicyTemplate{}
	tmpl.ObjectDefinition.Raw = []byte(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"check"},"spec":{"object-templates":[]}}`)
	for name, controls := range map[string]string{"policy-role": "AC-6 Least Privlege", "policy-etcd": "SC-28"} {
		p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "policies", Name: name, Annotations: map[string]string{
			policyv1.StandardsAnnotation: "NIST SP 800-53", policyv1.ControlsAnnotation: controls,
		}}, Spec: policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{tmpl}}}
		require.NoError(t, c.Create(ctx, p))
		state := policyv1.Compliant
		if name == "policy-role" {
			state = policyv1.NonCompliant
		}
		p.Status.Status = []*policyv1.CompliancePerClusterStatus{{ClusterName: "east", ClusterNamespace: "east", ComplianceState: state}}
		require.NoError(t, c.Status().Update(ctx, p))
	}

	// The official title replaces the misspelt one; Moderate has 287 controls, two covered, SC-28 met.
	out, errOut, code := runPolicyCLI(t, "compliance", "report", "--kubeconfig", kc, "--baseline", "moderate")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "AC-6 Least Privilege ")
	require.Contains(t, out, "BASELINE NIST SP 800-53 rev5 MODERATE (built-in; catalog NIST SP 800-53 rev5 5.1.1+u4")
	require.Contains(t, out, "287 controls, 2 covered, 1 met")
	require.Regexp(t, `AC Access Control\s+\d+\s+1\s+0\s+AC-6\s+AC-1,AC-2,`, out)

	out, errOut, code = runPolicyCLI(t, "compliance", "report", "--kubeconfig", kc, "--baseline", "low", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var r struct {
		Baseline struct {
			Baseline   string `json:"baseline"`
			InBaseline int    `json:"inBaseline"`
		} `json:"baseline"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Equal(t, "NIST SP 800-53 rev5 LOW", r.Baseline.Baseline)
	require.Equal(t, 149, r.Baseline.InBaseline)

	out, errOut, code = runPolicyCLI(t, "compliance", "report", "--kubeconfig", kc, "--baseline", "high", "-o", "csv")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "NIST SP 800-53,SC,System and Communications Protection,SC-28,Protection of Information at Rest,east,Compliant,policies/policy-etcd,,,met\n")
	require.Equal(t, 1+2+368, strings.Count(out, "\n"), "header, two covered controls, 368 uncovered")

	out, errOut, code = runPolicyCLI(t, "compliance", "report", "--kubeconfig", kc, "--baseline", "moderate", "-o", "html")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Baseline: NIST SP 800-53 rev5 MODERATE")

	out, errOut, code = runPolicyCLI(t, "compliance", "report", "--kubeconfig", kc, "--baseline", "moderate", "-o", "oscal")
	require.Equal(t, 0, code, errOut)
	v, err := validation.NewValidator([]byte(out))
	require.NoError(t, err)
	require.NoError(t, v.Validate(), "OSCAL assessment-results must be schema-valid")
	require.Equal(t, 287, strings.Count(out, `"control-id": `), "the result reviews the 287 controls of Moderate")
}

// cliError runs the CLI and returns its error (the root command leaves
// printing it to main).
func cliError(t *testing.T, args ...string) error {
	t.Helper()
	cmd := newRootCommand()
	cmd.SetOut(new(strings.Builder))
	cmd.SetErr(new(strings.Builder))
	cmd.SetArgs(args)
	return cmd.Execute()
}
