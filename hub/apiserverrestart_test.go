package hub

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestRestartOf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		before, now map[string]string
		want        bool
	}{
		{"first read", nil, map[string]string{"apiserver-a": "apiserver-a_1"}, false},
		{"unchanged", map[string]string{"apiserver-a": "apiserver-a_1"}, map[string]string{"apiserver-a": "apiserver-a_1"}, false},
		{"restarted: a new holder", map[string]string{"apiserver-a": "apiserver-a_1"}, map[string]string{"apiserver-a": "apiserver-a_2"}, true},
		{"between delete and create", map[string]string{"apiserver-a": "apiserver-a_1"}, map[string]string{}, false},
		{"one of three restarted", map[string]string{"a": "a_1", "b": "b_1", "c": "c_1"}, map[string]string{"a": "a_1", "b": "b_2", "c": "c_1"}, true},
		{"a replica added", map[string]string{"a": "a_1"}, map[string]string{"a": "a_1", "b": "b_1"}, false},
		{"a replica removed", map[string]string{"a": "a_1", "b": "b_1"}, map[string]string{"a": "a_1"}, false},
		{"the one apiserver renamed", map[string]string{"a": "a_1"}, map[string]string{"z": "z_1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got := restartOf(tc.before, tc.now)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestIdentitiesObserve: a new holder is a restart of ours only when the
// hub's connection was cut since the last read; either way the new holders
// are remembered.
func TestIdentitiesObserve(t *testing.T) {
	known := &identities{}
	a1 := map[string]string{"apiserver-a": "apiserver-a_1"}
	a2 := map[string]string{"apiserver-a": "apiserver-a_2"}
	a3 := map[string]string{"apiserver-a": "apiserver-a_3"}
	_, restart := known.observe(a1)
	assert.False(t, restart, "the first read")
	reason, restart := known.observe(a2)
	assert.False(t, restart, "a holder rewritten while the connection held")
	assert.Equal(t, "apiserver-a_2 (was apiserver-a_1)", reason)
	known.cutOff()
	_, restart = known.observe(map[string]string{})
	assert.False(t, restart, "between the old lease's deletion and the new one's creation")
	reason, restart = known.observe(a3)
	assert.True(t, restart, "a new holder after the connection was cut")
	assert.Equal(t, "apiserver-a_3 (was apiserver-a_2)", reason)
	_, restart = known.observe(a3)
	assert.False(t, restart, "the next run starts from the new holder")
}

// TestAPIServerWatch: on a real-looking sequence (the watch is cut, the lists
// fail while the apiserver is down, then show a new holder) the watch ends the
// run; a follower waits its stagger first; without the right to list the
// leases it stays quiet until its context ends.
func TestAPIServerWatch(t *testing.T) {
	lease := func(holder string) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "apiserver-a", Namespace: identityNS, Labels: map[string]string{"apiserver.kubernetes.io/identity": "kube-apiserver"}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
		}
	}
	restarting := func(t *testing.T) *fake.Clientset {
		cs := fake.NewClientset(lease("apiserver-a_1"))
		lists := 0
		cs.PrependReactor("list", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			lists++
			switch lists {
			case 2: // the apiserver is down
				return true, nil, errors.New("connection refused")
			case 3: // and back, with a new identity
				require.NoError(t, cs.Tracker().Update(coordinationv1.SchemeGroupVersion.WithResource("leases"), lease("apiserver-a_2"), identityNS))
			}
			return false, nil, nil
		})
		// Every watch is cut at once (the apiserver went away).
		cs.PrependWatchReactor("leases", func(k8stesting.Action) (bool, watch.Interface, error) {
			w := watch.NewFake()
			w.Stop()
			return true, w, nil
		})
		return cs
	}
	leader := make(chan struct{})
	close(leader)
	t.Run("the leader ends the run", func(t *testing.T) {
		known := &identities{}
		w := &apiserverWatch{client: restarting(t), interval: time.Millisecond, known: known, elected: leader, log: logr.Discard()}
		err := w.Start(context.Background())
		var restarted *apiserverRestarted
		require.ErrorAs(t, err, &restarted)
		assert.Equal(t, "apiserver-a_2 (was apiserver-a_1)", restarted.reason)
		assert.Equal(t, restarted.reason, known.takeRestart())
	})
	t.Run("a follower waits its stagger", func(t *testing.T) {
		w := &apiserverWatch{client: restarting(t), interval: time.Millisecond, known: &identities{}, elected: make(chan struct{}), stagger: 50 * time.Millisecond, log: logr.Discard()}
		start := time.Now()
		var restarted *apiserverRestarted
		require.ErrorAs(t, w.Start(context.Background()), &restarted)
		assert.GreaterOrEqual(t, time.Since(start), w.stagger)
	})
	t.Run("forbidden: quiet until the end", func(t *testing.T) {
		cs := fake.NewClientset()
		listed := make(chan struct{}, 1)
		var lists atomic.Int32
		cs.PrependReactor("list", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			lists.Add(1)
			select {
			case listed <- struct{}{}:
			default:
			}
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "", errors.New("no"))
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		w := &apiserverWatch{client: cs, interval: time.Millisecond, known: &identities{}, elected: leader, log: logr.Discard()}
		go func() { done <- w.Start(ctx) }()
		<-listed
		assert.Never(t, func() bool { return lists.Load() > 1 }, 100*time.Millisecond, 5*time.Millisecond,
			"a refused list is not tried again every interval")
		cancel()
		assert.NoError(t, <-done)
		assert.Empty(t, w.known.takeRestart())
	})
}
