package main

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
	"flotilla.dev/flotilla/test/testenv"
)

// `compliance history` and `compliance report --since` read the history a
// hub recorded (a SQLite file here) and the policies of a real hub.
func TestComplianceHistory(t *testing.T) {
	db := filepath.Join(t.TempDir(), "compliance.db")
	err := runCLIError(t, "compliance", "history", "--since", "last tuesday", "--compliance-db", db)
	require.ErrorContains(t, err, "last tuesday")

	ctx := context.Background()
	var s history.Store
	s, err = history.OpenSQLite(ctx, db)
	require.NoError(t, err)
	now := time.Now().UTC()
	day := 24 * time.Hour
	ev := func(cluster string, state compliance.State, ago time.Duration) history.Event {
		return history.Event{Policy: "policies/policy-role", Template: "role-check", Cluster: cluster, State: state, Message: string(state) + "; test", Time: now.Add(-ago)}
	}
	_, err = s.Record(ctx,
		ev("east", compliance.Compliant, 60*day), ev("east", compliance.NonCompliant, 20*day), ev("east", compliance.Compliant, 17*day),
		ev("east", compliance.NonCompliant, 3*day), ev("west", compliance.Compliant, 60*day))
	require.NoError(t, err)
	require.NoError(t, s.Close())

	out, errOut, code := runPolicyCLI(t, "compliance", "history", "--since", "30d", "--compliance-db", db)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `3 changes, 1 remediated, mean time to remediate 3d 0h`, out)
	out, errOut, code = runPolicyCLI(t, "compliance", "history", "--since", "30d", "--cluster", "west", "--compliance-db", db)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "west last became NonCompliant: never")
	out, errOut, code = runPolicyCLI(t, "compliance", "history", "--since", "10d", "--cluster", "east", "-o", "json", "--compliance-db", db)
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Changes                []history.Transition
		LastBecameNonCompliant time.Time
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.Len(t, doc.Changes, 1)
	require.Equal(t, compliance.Compliant, doc.Changes[0].From)
	require.WithinDuration(t, now.Add(-3*day), doc.LastBecameNonCompliant, time.Second)

	env := testenv.Start(t, testenv.Options{})
	kc := env.Hub.KubeconfigPath
	c, err := client.New(env.Hub.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "policies"}}))
	tmpl := &policyv1.PolicyTemplate{}
	tmpl.ObjectDefinition.Raw = []byte(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"role-check"},"spec":{"object-templates":[]}}`)
	p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "policies", Name: "policy-role", Annotations: map[string]string{
		policyv1.StandardsAnnotation: "NIST SP 800-53", policyv1.CategoriesAnnotation: "AC Access Control", policyv1.ControlsAnnotation: "AC-6 Least Privilege",
	}}, Spec: policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{tmpl}}}
	require.NoError(t, c.Create(ctx, p))
	p.Status.Status = []*policyv1.CompliancePerClusterStatus{
		{ClusterName: "east", ClusterNamespace: "east", ComplianceState: policyv1.NonCompliant},
		{ClusterName: "west", ClusterNamespace: "west", ComplianceState: policyv1.Compliant},
	}
	require.NoError(t, c.Status().Update(ctx, p))

	// The control over time: east NonCompliant at the end, Compliant at the start of a 10-day window.
	out, errOut, code = runPolicyCLI(t, "compliance", "history", "--control", "AC-6", "--since", "10d", "--compliance-db", db, "--kubeconfig", kc)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "NIST SP 800-53 AC-6 Least Privilege over time")
	require.Regexp(t, `(?m)^\S+ \S+\s+2\s+0\s+0\n`, out, "the first point: both compliant")

	out, errOut, code = runPolicyCLI(t, "compliance", "report", "--since", "30d", "--compliance-db", db, "--kubeconfig", kc)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `AC-6 Least Privilege\s+1\s+1\s+0\s+east`, out)
	require.Contains(t, out, "3 changes, 1 remediated")
	// --baseline and --since together: the coverage section and the history.
	out, errOut, code = runPolicyCLI(t, "compliance", "report", "--since", "30d", "--baseline", "moderate", "--compliance-db", db, "--kubeconfig", kc)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "BASELINE NIST SP 800-53 rev5 MODERATE")
	require.Contains(t, out, "287 controls, 1 covered, 0 met")
	require.Contains(t, out, "3 changes, 1 remediated")
	out, errOut, code = runPolicyCLI(t, "compliance", "report", "--since", "30d", "--compliance-db", db, "--kubeconfig", kc, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		SchemaVersion string
		History       struct {
			Trend struct{ Total []history.Point }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, compliance.SchemaVersion, rep.SchemaVersion)
	require.Len(t, rep.History.Trend.Total, 31)
	out, errOut, code = runPolicyCLI(t, "compliance", "report", "--since", "30d", "--compliance-db", db, "--kubeconfig", kc, "-o", "html")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `<svg id="trend"`)
	err = runCLIError(t, "compliance", "report", "--since", "30d", "--compliance-db", db, "--kubeconfig", kc, "-o", "csv")
	require.ErrorContains(t, err, "--since does not apply to -o csv")
}

// runCLIError runs the CLI and returns its error (the message main prints).
func runCLIError(t *testing.T, args ...string) error {
	t.Helper()
	cmd := newRootCommand()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs(args)
	return cmd.Execute()
}
