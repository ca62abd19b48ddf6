package hub

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"flotilla.dev/flotilla/hub/addonconversion"
	"flotilla.dev/flotilla/policy/compliance/web"
)

// offered lends n zero bytes without holding them and counts what was taken.
type offered struct {
	left  int64
	taken atomic.Int64
}

func (z *offered) Read(p []byte) (int, error) {
	if z.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), z.left)
	clear(p[:n])
	z.left -= n
	z.taken.Add(n)
	return int(n), nil
}

func heapAlloc() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// startWebhookServer serves the hub's webhook server (newWebhookServer) over
// TLS with the real conversion handler, an admission webhook and a stand-in
// at the compliance paths, and returns its base URL and an HTTP/2 client.
func startWebhookServer(t *testing.T, bodyTimeout time.Duration) (string, *http.Client, *atomic.Int64) {
	dir := t.TempDir()
	crt, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600))
	port, err := freePort("127.0.0.1")
	require.NoError(t, err)
	srv := newWebhookServer("127.0.0.1", port, dir, bodyTimeout)
	srv.Register(addonconversion.Path, addonconversion.Handler{})
	srv.Register("/validate-x", &webhook.Admission{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Allowed("")
	})})
	var pageCalls atomic.Int64
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pageCalls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
	})
	for _, p := range []string{web.PagePath, web.APIPath, web.LoginPath} {
		srv.Register(p, page)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	require.Eventually(t, func() bool { return srv.StartedChecker()(nil) == nil }, 30*time.Second, 20*time.Millisecond)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(crt))
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	return fmt.Sprintf("https://127.0.0.1:%d", port), c, &pageCalls
}

// TestWebhookServerRefusesOversizedBodies: every path the hub serves refuses
// a declared body above its cap with 413 and a message naming the path and
// the limit, without reading it: neither the heap nor what the server took
// from the client grows with the 1 GiB offered.
func TestWebhookServerRefusesOversizedBodies(t *testing.T) {
	base, c, pageCalls := startWebhookServer(t, 0)
	const gib = 1 << 30
	for path, limit := range map[string]int64{
		addonconversion.Path: addonconversion.MaxReviewBytes,
		"/validate-x":        8 << 20,
		web.PagePath:         64 << 10,
		web.APIPath:          64 << 10,
		web.LoginPath:        64 << 10,
	} {
		t.Run(path, func(t *testing.T) {
			before := heapAlloc()
			body := &offered{left: gib}
			req, err := http.NewRequest(http.MethodPost, base+path, body)
			require.NoError(t, err)
			req.ContentLength = gib
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(req)
			require.NoError(t, err)
			msg, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			grew := heapAlloc() - before
			assert.Equal(t, "HTTP/2.0", resp.Proto, "the apiserver speaks HTTP/2 to webhooks")
			assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
			assert.Contains(t, string(msg), fmt.Sprintf("%s: request body of %d bytes is larger than the limit of %d bytes", path, int64(gib), limit))
			assert.Less(t, body.taken.Load(), int64(64<<20), "the client was stopped long before 1 GiB")
			assert.Less(t, grew, int64(16<<20), "the heap did not grow with the offered body (grew %d bytes)", grew)
		})
	}
	assert.Zero(t, pageCalls.Load(), "no handler ran")

	t.Run("a conversion review within the cap is converted", func(t *testing.T) {
		review := []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"1","desiredAPIVersion":"addon.open-cluster-management.io/v1beta1","objects":[]}}`)
		resp, err := c.Post(base+addonconversion.Path, "application/json", bytes.NewReader(review))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		out := &apiextensionsv1.ConversionReview{}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
		assert.Equal(t, "1", string(out.Response.UID))
	})
}

// TestWebhookServerStalledBody: a client that starts a body and stalls is
// answered once the body timeout passes (HTTP/2, as the apiserver calls).
func TestWebhookServerStalledBody(t *testing.T) {
	base, c, _ := startWebhookServer(t, 300*time.Millisecond)
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { _, _ = pw.Write([]byte(`{"apiVersion":`)) }() // and nothing more
	req, err := http.NewRequest(http.MethodPost, base+addonconversion.Path, pr)
	require.NoError(t, err)
	req.ContentLength = 1000
	resp, err := c.Do(req)
	require.NoError(t, err)
	msg, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.True(t, strings.Contains(string(msg), "conversion webhook: read body"), "got %q", msg)
}

// TestWebhookServerBoundsHeaders: the compliance page's server (the hub's
// webhook server) refuses headers above 1 MiB with 431, and closes a
// connection whose request headers stall (its ReadHeaderTimeout) instead of
// holding it open.
func TestWebhookServerBoundsHeaders(t *testing.T) {
	base, c, pageCalls := startWebhookServer(t, 0)

	t.Run("oversized headers", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, base+web.APIPath, nil)
		require.NoError(t, err)
		req.Header.Set("X-Padding", strings.Repeat("a", 2<<20))
		resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: c.Transport.(*http.Transport).TLSClientConfig}}).Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	})
	t.Run("stalled headers", func(t *testing.T) {
		conf := c.Transport.(*http.Transport).TLSClientConfig.Clone()
		conf.NextProtos = []string{"http/1.1"}
		conn, err := tls.Dial("tcp", strings.TrimPrefix(base, "https://"), conf)
		require.NoError(t, err)
		defer conn.Close()
		_, err = conn.Write([]byte("GET " + web.PagePath + " HTTP/1.1\r\nHost: hub\r\nX-Slow: "))
		require.NoError(t, err)
		// Nothing more is sent. The server must end the connection on its
		// own; the deadline here only keeps a broken server from hanging
		// the test.
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Minute)))
		_, err = io.ReadAll(conn)
		var ne net.Error
		assert.False(t, errors.As(err, &ne) && ne.Timeout(), "the server held the stalled connection open: %v", err)
	})
	assert.Zero(t, pageCalls.Load(), "no handler ran")
}
