// Package deny_test tests, end to end on real apiservers, that a deny ends
// delivery: a hub (hub.Run, webhooks included) and klusterlets with their work
// agents, all in-process.
package deny_test

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
	env   *testenv.Env
	token string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

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
