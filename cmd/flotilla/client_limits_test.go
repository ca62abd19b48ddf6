package main

import (
	"bytes"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
)

// TestClientLimitFlagsRefused: client limits a client cannot run with fail
// before anything connects, naming the flag.
func TestClientLimitFlagsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		cmd  func() *cobra.Command
		args []string
		want string
	}{
		"hub: zero qps":            {newHubCommand, []string{"--kube-api-qps", "0"}, "--kube-api-qps 0: must be above 0"},
		"hub: negative qps":        {newHubCommand, []string{"--kube-api-qps", "-5"}, "--kube-api-qps -5: must be above 0"},
		"hub: burst below qps":     {newHubCommand, []string{"--kube-api-qps", "50", "--kube-api-burst", "10"}, "--kube-api-burst 10: must be at least --kube-api-qps (50)"},
		"policy run: zero qps":     {newPolicyRunCommand, []string{"--kube-api-qps", "0"}, "--kube-api-qps 0: must be above 0"},
		"policy run: burst below":  {newPolicyRunCommand, []string{"--kube-api-qps", "50", "--kube-api-burst", "49"}, "--kube-api-burst 49: must be at least --kube-api-qps (50)"},
		"policy run: not a number": {newPolicyRunCommand, []string{"--kube-api-qps", "fast"}, "invalid argument \"fast\" for \"--kube-api-qps\""},
	} {
		t.Run(name, func(t *testing.T) {
			c := tc.cmd()
			c.SetArgs(append(tc.args, "--kubeconfig", "/nonexistent"))
			c.SetOut(&bytes.Buffer{})
			c.SetErr(&bytes.Buffer{})
			assert.ErrorContains(t, c.Execute(), tc.want)
		})
	}
}
