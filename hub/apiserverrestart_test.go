package hub

import (
	"context"
	"errors"
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

// TestAPIServerWatch: the watch ends the run when an identity lease it has
// seen gets a new holder, not before the controllers have run minRun, and
// goes quiet (no restarts) when it may not read the leases.
func TestAPIServerWatch(t *testing.T) {
	lease := func(holder string) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "apiserver-a", Namespace: identityNS, Labels: map[string]string{"apiserver.kubernetes.io/identity": "kube-apiserver"}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
		}
	}
	t.Run("a new holder ends the run after minRun", func(t *testing.T) {
		cs := fake.NewClientset(lease("apiserver-a_1"))
		reads := 0
		cs.PrependReactor("list", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			reads++
			if reads == 3 {
				// The apiserver restarted between the second and third reads.
				err := cs.Tracker().Update(coordinationv1.SchemeGroupVersion.WithResource("leases"), lease("apiserver-a_2"), identityNS)
				require.NoError(t, err)
			}
			return false, nil, nil
		})
		w := &apiserverWatch{client: cs, interval: time.Millisecond, minRun: 50 * time.Millisecond, log: logr.Discard()}
		start := time.Now()
		err := w.Start(context.Background())
		var restarted *apiserverRestarted
		require.ErrorAs(t, err, &restarted)
		assert.Contains(t, restarted.reason, "apiserver-a_2 (was apiserver-a_1)")
		assert.GreaterOrEqual(t, time.Since(start), w.minRun, "a restart waits until the controllers have run minRun")
	})
	t.Run("forbidden: no restarts", func(t *testing.T) {
		cs := fake.NewClientset()
		cs.PrependReactor("list", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "", errors.New("no"))
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- (&apiserverWatch{client: cs, interval: time.Millisecond, log: logr.Discard()}).Start(ctx)
		}()
		cancel()
		assert.NoError(t, <-done)
	})
}
