package klusterlet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

func TestDeliveryFor(t *testing.T) {
	accepted := metav1.Condition{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionTrue}
	denied := metav1.Condition{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionFalse}
	mk := func(accepts bool, deleting bool, conds ...metav1.Condition) *clusterv1.ManagedCluster {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: accepts},
			Status: clusterv1.ManagedClusterStatus{Conditions: conds}}
		if deleting {
			now := metav1.Now()
			mc.DeletionTimestamp = &now
		}
		return mc
	}
	tests := []struct {
		name string
		mc   *clusterv1.ManagedCluster
		want delivery
	}{
		{"gone", nil, deliverNothing},
		{"accepted and granted", mk(true, false, accepted), deliverAll},
		{"accepted, rights not granted yet", mk(true, false), deliverNothing},
		{"re-accepted, hub still shows the deny", mk(true, false, denied), deliverNothing},
		{"denied: the spec counts before the hub revokes anything", mk(false, false, accepted), deliverNothing},
		{"denied and revoked", mk(false, false, denied), deliverNothing},
		{"never accepted", mk(false, false), deliverNothing},
		{"being deleted", mk(true, true, accepted), deliverCleanup},
		{"denied and being deleted", mk(false, true, denied), deliverCleanup},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, deliveryFor(tt.mc)) })
	}
}

// fakeWork records the work agent's runs for superviseWork.
type fakeWork struct {
	started chan func() bool // cleanupOnly of each run
	stopped chan struct{}
	fail    chan error // a run ends with the error sent here
}

func newFakeWork() *fakeWork {
	return &fakeWork{started: make(chan func() bool, 10), stopped: make(chan struct{}, 10), fail: make(chan error)}
}

func (f *fakeWork) run(ctx context.Context, cleanupOnly func() bool) error {
	f.started <- cleanupOnly
	defer func() { f.stopped <- struct{}{} }()
	select {
	case <-ctx.Done():
		return nil
	case err := <-f.fail:
		return err
	}
}

const wait = 10 * time.Second

func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(wait):
		require.FailNow(t, "timed out waiting: "+what)
	}
	var zero T
	return zero
}

func none[T any](t *testing.T, c <-chan T, what string) {
	t.Helper()
	select {
	case <-c:
		require.FailNow(t, "unexpected: "+what)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestSuperviseWork(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := newFakeWork()
	states := make(chan delivery)
	done := make(chan struct{})
	go func() { superviseWork(ctx, states, f.run, time.Millisecond, logr.Discard()); close(done) }()

	none(t, f.started, "the work agent runs before the hub is known to accept the cluster")
	states <- deliverAll
	cleanupOnly := recv(t, f.started, "start on acceptance")
	assert.False(t, cleanupOnly())

	states <- deliverAll // a heartbeat: nothing changes
	none(t, f.stopped, "a repeated acceptance restarts the agent")

	states <- deliverNothing
	recv(t, f.stopped, "stop on deny")
	states <- deliverNothing
	none(t, f.started, "the agent runs while denied")

	states <- deliverAll
	cleanupOnly = recv(t, f.started, "start again on re-accept")

	states <- deliverCleanup
	require.Eventually(t, cleanupOnly, wait, time.Millisecond, "the running agent switches to cleanup only")
	none(t, f.stopped, "deletion stops the agent: it must finish deleting the works")

	f.fail <- errors.New("boom")
	recv(t, f.stopped, "the failed run ends")
	cleanupOnly = recv(t, f.started, "a failed agent is restarted")
	assert.True(t, cleanupOnly(), "still cleanup only")

	cancel()
	recv(t, f.stopped, "stop when the klusterlet stops")
	recv(t, done, "superviseWork returns")
}
