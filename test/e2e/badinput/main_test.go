// Package badinput_test feeds a table of bad inputs, of every kind the hub and
// its agents read, to real apiservers with the whole hub (hub.Run, webhooks
// included) and a klusterlet joined through the real path, and checks after
// each one that it harmed only itself: it is refused at admission with a
// message naming the field, or admitted and reported on its own status; and a
// good object of the same kind in another namespace is still handled.
package badinput_test

import (
	"context"
	"os"
	"testing"

	"flotilla.dev/flotilla/policy/configpolicy"
	"flotilla.dev/flotilla/test/fleet"
	"flotilla.dev/flotilla/test/testenv"
)

var (
	env   *testenv.Env
	token string
)

// TestMain: a hub and one cluster (not joined), and the policy engine
// governing that cluster, as `flotilla policy run` would.
func TestMain(m *testing.M) {
	os.Exit(fleet.Main(m, fleet.Options{Clusters: 1, Setup: func(ctx context.Context, f *fleet.Fleet) error {
		env, token = f.Env, f.Token
		_, err := configpolicy.Start(ctx, configpolicy.Options{Config: f.Clusters[0].Config})
		return err
	}}, nil))
}
