package registration

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"flotilla.dev/flotilla/test/testenv"
)

// methods counts a client's requests by method.
type methods struct {
	mu   sync.Mutex
	n    map[string]int
	fail string // the method of the next request to fail without reaching the hub
}

func (m *methods) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		m.mu.Lock()
		m.n[r.Method]++
		fail := m.fail == r.Method
		if fail {
			m.fail = ""
		}
		m.mu.Unlock()
		if fail {
			return nil, errors.New("injected: connection reset")
		}
		return rt.RoundTrip(r)
	})
}

// failNext makes the next request with method fail.
func (m *methods) failNext(method string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail = method
}

func (m *methods) take() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.n
	m.n = map[string]int{}
	return n
}

// TestLeaseRenewalIsOneWrite, on a real hub: the agent reads the lease once
// and then renews it with one write a round; when someone else has written it
// in between, the conflicting write makes it read the lease again and renew
// that, keeping the other writer's change.
func TestLeaseRenewalIsOneWrite(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(env.Hub.Config)
	_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoordinationV1().Leases("c1").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName}}, metav1.CreateOptions{})
	require.NoError(t, err)

	counted := methods{n: map[string]int{}}
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.Wrap(counted.wrap)
	hub := &hubClients{kube: kubernetes.NewForConfigOrDie(cfg)}
	a := &Agent{opts: Options{ClusterName: "c1"}, agentName: "a1", log: logr.Discard()}
	renewTime := func() time.Time {
		l, err := admin.CoordinationV1().Leases("c1").Get(ctx, LeaseName, metav1.GetOptions{})
		require.NoError(t, err)
		require.NotNil(t, l.Spec.RenewTime)
		return l.Spec.RenewTime.Time
	}

	require.NoError(t, a.renewLease(ctx, hub, time.Minute))
	assert.Equal(t, map[string]int{http.MethodGet: 1, http.MethodPut: 1}, counted.take(), "the first renewal reads the lease")
	last := renewTime()
	for range 3 {
		require.NoError(t, a.renewLease(ctx, hub, time.Minute))
		assert.Equal(t, map[string]int{http.MethodPut: 1}, counted.take(), "a renewal is one write")
		now := renewTime()
		assert.True(t, now.After(last), "renewTime moves on: %s, then %s", last, now)
		last = now
	}

	l, err := admin.CoordinationV1().Leases("c1").Get(ctx, LeaseName, metav1.GetOptions{})
	require.NoError(t, err)
	l.Labels = map[string]string{"written-by": "someone-else"}
	_, err = admin.CoordinationV1().Leases("c1").Update(ctx, l, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, a.renewLease(ctx, hub, time.Minute))
	assert.Equal(t, map[string]int{http.MethodGet: 1, http.MethodPut: 2}, counted.take(), "a conflict: read again, write again")
	l, err = admin.CoordinationV1().Leases("c1").Get(ctx, LeaseName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "someone-else", l.Labels["written-by"], "the other writer's change is kept")
	assert.True(t, l.Spec.RenewTime.After(last), "and the lease is renewed")
	assert.Equal(t, a.subject().CommonName, *l.Spec.HolderIdentity)

	// A renewal that failed for another reason (a busy hub, a dropped
	// connection) says nothing about the lease: the next one is one write.
	counted.take()
	counted.failNext(http.MethodPut)
	require.Error(t, a.renewLease(ctx, hub, time.Minute))
	assert.Equal(t, map[string]int{http.MethodPut: 1}, counted.take(), "the failed renewal: one write, no read")
	require.NoError(t, a.renewLease(ctx, hub, time.Minute))
	assert.Equal(t, map[string]int{http.MethodPut: 1}, counted.take(), "after a failure, still one write")
}
