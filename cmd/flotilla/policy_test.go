package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runPolicyCLI runs the CLI in-process and returns stdout, stderr and the exit code.
func runPolicyCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetIn(strings.NewReader(""))
	cmd.SetArgs(args)
	err := cmd.Execute()
	code := 0
	if err != nil {
		code = exitCode(err)
	}
	return out.String(), errOut.String(), code
}

// `policy dryrun` exits 0 when Compliant, 2 when NonCompliant, 1 on error.
func TestPolicyDryrunExitCodes(t *testing.T) {
	td := filepath.Join("..", "..", "policy", "configpolicy", "dryrun", "testdata")
	out, _, code := runPolicyCLI(t, "policy", "dryrun", "-f", filepath.Join(td, "nist-namespace-present", "policy.yaml"),
		"--from", filepath.Join(td, "nist-namespace-present"))
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "namespaces [prod] found as specified")

	out, _, code = runPolicyCLI(t, "policy", "dryrun", "-f", filepath.Join(td, "nist-namespace-missing", "policy.yaml"), "-o", "json")
	require.Equal(t, 2, code)
	require.Contains(t, out, `"message": "NonCompliant; violation - namespaces [prod] not found"`)

	_, _, code = runPolicyCLI(t, "policy", "dryrun", "-f", filepath.Join(td, "does-not-exist.yaml"))
	require.Equal(t, 1, code)
	_, _, code = runPolicyCLI(t, "policy", "dryrun")
	require.Equal(t, 1, code, "-f is required")
	_, _, code = runPolicyCLI(t, "policy", "dryrun", "-f", filepath.Join(td, "nist-namespace-missing", "policy.yaml"), "-o", "xml")
	require.Equal(t, 1, code)
}

// `policy dryrun` audits Gatekeeper constraints offline, with the same exit
// codes, and prints each violation's msg with its object.
func TestPolicyDryrunGatekeeperExitCodes(t *testing.T) {
	td := filepath.Join("..", "..", "policy", "configpolicy", "dryrun", "testdata")
	run := func(c string) (string, int) {
		out, _, code := runPolicyCLI(t, "policy", "dryrun", "-f", filepath.Join(td, c, "policy.yaml"),
			"--from", filepath.Join(td, c, "objects.yaml"))
		return out, code
	}
	out, code := run("gatekeeper-required-labels-in-policy")
	require.Equal(t, 2, code, out)
	require.Contains(t, out, `v1 Namespace dev: missing required labels: ["owner"]`)

	out, code = run("gatekeeper-allowed-repos-compliant")
	require.Equal(t, 0, code, out)

	out, code = run("gatekeeper-container-limits-warn")
	require.Equal(t, 0, code, "warn is Compliant: %s", out)
	require.Contains(t, out, "v1 Pod default/job: container run memory limit 1Gi is above 512Mi")

	out, code = run("gatekeeper-broken-rego-and-external-data")
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "rego does not parse: rego:5: rego_parse_error: unexpected } token")
}
