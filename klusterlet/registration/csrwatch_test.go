package registration

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"flotilla.dev/flotilla/test/testenv"
)

// watchSeen records the watch requests a client makes: whether each carried
// a deadline (the client's request timeout) and the timeoutSeconds it asked.
type watchSeen struct {
	mu      sync.Mutex
	watches []watchRequest
}

type watchRequest struct {
	deadline       bool
	timeoutSeconds string
}

func (w *watchSeen) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Query().Get("watch") == "true" {
			_, deadline := r.Context().Deadline()
			w.mu.Lock()
			w.watches = append(w.watches, watchRequest{deadline: deadline, timeoutSeconds: r.URL.Query().Get("timeoutSeconds")})
			w.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

func (w *watchSeen) seen() []watchRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]watchRequest(nil), w.watches...)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestCSRWatchOutlivesTheRequestTimeout: the agent waits for its certificate
// with a watch that its client's request timeout (15 s in the agent) does not
// cut, asked to last csrWatchSeconds, and gets the certificate once the CSR is
// approved and kube-controller-manager has signed it (a real hub).
func TestCSRWatchOutlivesTheRequestTimeout(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(env.Hub.Config)

	key, err := newKey()
	require.NoError(t, err)
	csr, err := BuildCSR("c1", "agent1", key, 0)
	require.NoError(t, err)
	created, err := admin.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	require.NoError(t, err)

	var seen watchSeen
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.Wrap(seen.wrap)
	cfg = withTimeout(cfg)
	hub, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	watcher, err := kubernetes.NewForConfig(watchConfig(cfg))
	require.NoError(t, err)
	type result struct {
		cert []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		cert, err := waitForCertificate(ctx, hub, watcher, created.Name)
		done <- result{cert, err}
	}()
	require.Eventually(t, func() bool { return len(seen.seen()) > 0 }, time.Minute, 50*time.Millisecond, "the agent watches its CSR")

	created.Status.Conditions = append(created.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "approved by the test"})
	_, err = admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, created.Name, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	var got result
	select {
	case got = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("no certificate within two minutes of the approval")
	}
	require.NoError(t, got.err)
	assert.NotEmpty(t, got.cert, "kube-controller-manager's certificate")
	for _, w := range seen.seen() {
		assert.False(t, w.deadline, "a CSR watch bounded by the client's request timeout")
		assert.Equal(t, "300", w.timeoutSeconds, "the watch asks the hub for minutes")
	}
}
