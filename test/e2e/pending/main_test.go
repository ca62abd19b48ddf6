// Package pending_test tests, on real apiservers with the whole hub running
// (hub.Run, webhooks included), that a cluster nobody accepted is never
// placed: not decided by any Placement, no replicated policy and no
// ManifestWork written for it, at any moment (issue 33 point 1).
package pending_test

import (
	"context"
	"os"
	"testing"

	"flotilla.dev/flotilla/test/fleet"
	"flotilla.dev/flotilla/test/testenv"
)

var (
	env *testenv.Env
	// token is a bootstrap token minted by `init`: the identity a joining
	// agent creates its ManagedCluster with.
	token string
)

// TestMain: a hub, no clusters (the tests create pending ones).
func TestMain(m *testing.M) {
	os.Exit(fleet.Main(m, fleet.Options{Setup: func(_ context.Context, f *fleet.Fleet) error {
		env, token = f.Env, f.Token
		return nil
	}}, nil))
}
