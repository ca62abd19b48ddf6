// Package pending_test tests, on real apiservers with the whole hub running
// (hub.Run, webhooks included), that a cluster nobody accepted is never
// placed: not decided by any Placement, no replicated policy and no
// ManifestWork written for it, at any moment (issue 33 point 1).
package pending_test

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
	"flotilla.dev/flotilla/test/hubtest"
	"flotilla.dev/flotilla/test/testenv"
)

var (
	env *testenv.Env
	// token is a bootstrap token minted by `init`: the identity a joining
	// agent creates its ManagedCluster with.
	token string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctrl.SetLogger(klog.Background())
	var err error
	if env, err = testenv.New(testenv.Options{}); err != nil {
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
	code := m.Run()
	cancel()
	<-hubDone
	return code
}
