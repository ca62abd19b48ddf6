// Package deny_test tests, end to end on real apiservers, that a deny ends
// delivery: a hub (hub.Run, webhooks included) and klusterlets with their work
// agents, all in-process.
package deny_test

import (
	"context"
	"os"
	"testing"

	"flotilla.dev/flotilla/test/fleet"
	"flotilla.dev/flotilla/test/testenv"
)

var (
	env   *testenv.Env
	token string
)

// TestMain: a hub and two clusters, which the tests join themselves.
func TestMain(m *testing.M) {
	os.Exit(fleet.Main(m, fleet.Options{Clusters: 2, Setup: func(_ context.Context, f *fleet.Fleet) error {
		env, token = f.Env, f.Token
		return nil
	}}, nil))
}
