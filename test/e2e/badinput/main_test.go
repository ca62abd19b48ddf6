// Package badinput_test feeds a table of bad inputs, of every kind the hub and
// its agents read, to real apiservers with the whole hub (hub.Run, webhooks
// included) and a klusterlet joined through the real path, and checks after
// each one that it harmed only itself: it is refused at admission with a
// message naming the field, or admitted and reported on its own status; and a
// good object of the same kind in another namespace is still handled.
package badinput_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/hub/registration/bootstrap"
	"flotilla.dev/flotilla/policy/configpolicy"
	"flotilla.dev/flotilla/test/hubtest"
	"flotilla.dev/flotilla/test/testenv"
)

var (
	env   *testenv.Env
	token string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctrl.SetLogger(klog.Background())
	var err error
	env, err = testenv.New(testenv.Options{Clusters: 1})
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
	hubDone, err := hubtest.Start(ctx, hub.Options{Config: env.Hub.Config}, 2*time.Minute)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The policy engine governs the managed cluster, as `flotilla policy run` would.
	if _, err := configpolicy.Start(ctx, configpolicy.Options{Config: env.Clusters[0].Config}); err != nil {
		fmt.Fprintln(os.Stderr, "policy engine:", err)
		return 1
	}
	code := m.Run()
	cancel()
	<-hubDone
	return code
}
