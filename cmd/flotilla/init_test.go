package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"flotilla.dev/flotilla/hub/registration/bootstrap"
)

func TestPrintToken(t *testing.T) {
	res := &bootstrap.Result{Token: "tok", HubAPIServer: "https://hub:6443", ExpiresAt: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)}
	res.JoinCommand = bootstrap.JoinCommand(res, "<cluster_name>")

	var out bytes.Buffer
	require.NoError(t, printToken(&out, "table", res))
	assert.Contains(t, out.String(), "flotilla join --hub-token tok --hub-apiserver https://hub:6443 --cluster-name <cluster_name>")
	assert.Contains(t, out.String(), "2026-01-01T01:00:00Z")

	res.CAHash = "sha256:0123"
	res.JoinCommand = bootstrap.JoinCommand(res, "<cluster_name>")
	assert.Equal(t, "flotilla join --hub-token tok --hub-apiserver https://hub:6443 --cluster-name <cluster_name> --ca-hash sha256:0123", res.JoinCommand)

	out.Reset()
	require.NoError(t, printToken(&out, "json", res))
	got := map[string]any{}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	assert.Equal(t, "tok", got["token"])
	assert.Equal(t, res.JoinCommand, got["joinCommand"])

	out.Reset()
	require.NoError(t, printToken(&out, "yaml", res))
	assert.Contains(t, out.String(), "hubAPIServer: https://hub:6443")
}

// TestAddonImageFlagsRefused: a bad --addon-image, or addon flags that would
// be dropped, fail before anything connects.
func TestAddonImageFlagsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		cmd  func() *cobra.Command
		args []string
		want string
	}{
		"hub: not an image":         {newHubCommand, []string{"--addon-image", "Registry/Flotilla:v 1", "--kubeconfig", "/nonexistent"}, "--addon-image: \"Registry/Flotilla:v 1\" is not an image reference"},
		"init: addon image alone":   {newInitCommand, []string{"--addon-image", "a.io/f:1", "--kubeconfig", "/nonexistent"}, "add --deploy"},
		"init: addon signers alone": {newInitCommand, []string{"--addon-signers", "example.com/x", "--kubeconfig", "/nonexistent"}, "add --deploy"},
		"init: nil executor alone":  {newInitCommand, []string{"--nil-executor-validating", "--kubeconfig", "/nonexistent"}, "add --deploy"},
		"init: db secret alone":     {newInitCommand, []string{"--compliance-db-secret", "db", "--kubeconfig", "/nonexistent"}, "--compliance-db-secret, --compliance-pvc and --compliance-pvc-size choose where the hub that --deploy installs"},
		"init: pvc alone":           {newInitCommand, []string{"--compliance-pvc", "history", "--kubeconfig", "/nonexistent"}, "add --deploy"},
		"init: both stores": {newInitCommand, []string{"--deploy", "--image", "a.io/f:1", "--compliance-db-secret", "db", "--compliance-pvc", "history", "--kubeconfig", "/nonexistent"},
			"--compliance-db-secret and --compliance-pvc both name"},
	} {
		t.Run(name, func(t *testing.T) {
			c := tc.cmd()
			c.SetArgs(tc.args)
			c.SetOut(&bytes.Buffer{})
			c.SetErr(&bytes.Buffer{})
			assert.ErrorContains(t, c.Execute(), tc.want)
		})
	}
}
