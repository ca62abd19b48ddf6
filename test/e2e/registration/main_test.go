// Package registration_test tests cluster registration end to end on real
// apiservers: a hub and two managed clusters (test/testenv), the hub and the
// klusterlets running in-process with their own contexts.
package registration_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/hub/registration"
	"flotilla.dev/flotilla/hub/registration/bootstrap"
	"flotilla.dev/flotilla/test/hubtest"
	"flotilla.dev/flotilla/test/testenv"
)

// autoJoiner is the hub's one --auto-approve-users entry.
const autoJoiner = "auto-joiner"

var (
	env *testenv.Env
	// token is a bootstrap token minted by `init` on the shared hub.
	token string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(klog.Background())
	var err error
	env, err = testenv.New(testenv.Options{Clusters: 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer env.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	res, err := bootstrap.Init(ctx, bootstrap.Options{Config: env.Hub.Config})
	if err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		return 1
	}
	token = res.Token

	hubDone, err := hubtest.Start(ctx, hub.Options{
		Config:       env.Hub.Config,
		Registration: registration.Options{LeaseGraceMultiplier: 5, AutoApproveUsers: []string{autoJoiner}},
	}, 2*time.Minute)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	cancel()
	<-hubDone
	return code
}
