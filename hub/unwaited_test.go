package hub

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"flotilla.dev/flotilla/test/testenv"
)

// unwaited reads controller-runtime's words; these cases have a real manager
// say them, so that a release that rewords them fails here rather than let the
// hub start a second manager beside reconcilers that still run.
func TestUnwaited(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	kube := kubernetes.NewForConfigOrDie(env.Hub.Config)
	newManager := func(t *testing.T, opts manager.Options) manager.Manager {
		opts.Metrics = metricsserver.Options{BindAddress: "0"}
		mgr, err := ctrl.NewManager(env.Hub.Config, opts)
		require.NoError(t, err)
		return mgr
	}
	run := func(mgr manager.Manager, ctx context.Context) <-chan error {
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		return done
	}

	t.Run("the leader lease lost", func(t *testing.T) {
		mgr := newManager(t, manager.Options{LeaderElection: true, LeaderElectionNamespace: "default", LeaderElectionID: "unwaited",
			LeaseDuration: ptr.To(4 * time.Second), RenewDeadline: ptr.To(2 * time.Second), RetryPeriod: ptr.To(200 * time.Millisecond)})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := run(mgr, ctx)
		<-mgr.Elected()
		// Another holder takes the lease for an hour: the manager's renewals fail.
		leases := kube.CoordinationV1().Leases("default")
		require.Eventually(t, func() bool {
			l, err := leases.Get(ctx, "unwaited", metav1.GetOptions{})
			if err != nil {
				return false
			}
			l.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To("thief"), LeaseDurationSeconds: ptr.To[int32](3600),
				AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()}}
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
			return err == nil
		}, time.Minute, 100*time.Millisecond)
		select {
		case err := <-done:
			require.Error(t, err)
			assert.True(t, unwaited(err), "%v", err)
		case <-time.After(time.Minute):
			t.Fatal("the manager kept running without its lease")
		}
	})

	t.Run("the graceful stop timed out", func(t *testing.T) {
		mgr := newManager(t, manager.Options{GracefulShutdownTimeout: ptr.To(100 * time.Millisecond)})
		release := make(chan struct{})
		defer close(release)
		started := make(chan struct{})
		require.NoError(t, mgr.Add(manager.RunnableFunc(func(context.Context) error {
			close(started)
			<-release // deaf to its context
			return nil
		})))
		ctx, cancel := context.WithCancel(context.Background())
		done := run(mgr, ctx)
		<-started
		cancel()
		err := <-done
		require.Error(t, err)
		assert.True(t, unwaited(err), "%v", err)
	})

	t.Run("a failed start was waited for", func(t *testing.T) {
		mgr := newManager(t, manager.Options{})
		require.NoError(t, mgr.Add(manager.RunnableFunc(func(context.Context) error { return errors.New("cache sync failed") })))
		err := <-run(mgr, context.Background())
		require.Error(t, err)
		assert.False(t, unwaited(err), "%v", err)
	})
}
