// Package registration_test tests cluster registration end to end on real
// apiservers: a hub and two managed clusters (test/testenv), the hub and the
// klusterlets running in-process with their own contexts.
package registration_test

import (
	"context"
	"os"
	"testing"

	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/hub/registration"
	"flotilla.dev/flotilla/test/fleet"
	"flotilla.dev/flotilla/test/testenv"
)

// autoJoiner is the hub's one --auto-approve-users entry.
const autoJoiner = "auto-joiner"

var (
	env *testenv.Env
	// token is a bootstrap token minted by `init` on the shared hub.
	token string
)

// TestMain: a hub (lease grace five periods, one auto-approve user) and two
// clusters, which the tests join themselves.
func TestMain(m *testing.M) {
	os.Exit(fleet.Main(m, fleet.Options{Clusters: 2,
		Hub: hub.Options{Registration: registration.Options{LeaseGraceMultiplier: 5, AutoApproveUsers: []string{autoJoiner}}},
		Setup: func(_ context.Context, f *fleet.Fleet) error {
			env, token = f.Env, f.Token
			return nil
		}}, nil))
}
