package httplimit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// zeros offers n zero bytes without holding them, counting what was taken.
type zeros struct {
	left  int64
	taken atomic.Int64
}

func (z *zeros) Read(p []byte) (int, error) {
	if z.left <= 0 {
		return 0, io.EOF
	}
	n := int64(len(p))
	if n > z.left {
		n = z.left
	}
	clear(p[:n])
	z.left -= n
	z.taken.Add(n)
	return int(n), nil
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// readAll is a handler that reads the whole body as most handlers do, and
// answers 413 with TooLarge when the cap stops it.
func readAll(reads *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		body, err := io.ReadAll(r.Body)
		if IsTooLarge(err) {
			http.Error(w, TooLarge(r.URL.Path, -1, 1<<20), http.StatusRequestEntityTooLarge)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte{byte(len(body))})
	})
}

// TestDeclaredOversizeRefusedUnread: a 1 GiB declared body is refused with
// 413 and a message naming path, size and limit, the handler never runs, and
// neither the server's heap nor what it took from the client grows with it.
func TestDeclaredOversizeRefusedUnread(t *testing.T) {
	var reads atomic.Int64
	srv := httptest.NewServer(Handler(readAll(&reads), Limits{MaxBodyBytes: 1 << 20}))
	defer srv.Close()

	before := heap()
	body := &zeros{left: 1 << 30}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/convert", body)
	require.NoError(t, err)
	req.ContentLength = 1 << 30
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	msg, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	after := heap()

	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Contains(t, string(msg), "/convert: request body of 1073741824 bytes is larger than the limit of 1048576 bytes")
	assert.Zero(t, reads.Load(), "the handler never runs")
	assert.Less(t, body.taken.Load(), int64(64<<20), "the client was stopped long before 1 GiB")
	grew := int64(after) - int64(before)
	assert.Less(t, grew, int64(16<<20), "the heap did not grow with the offered body (grew %d bytes)", grew)
}

// TestUndeclaredOversizeStopsAtCap: a chunked body (no Content-Length) stops
// at the cap: the handler's read fails with IsTooLarge.
func TestUndeclaredOversizeStopsAtCap(t *testing.T) {
	var reads atomic.Int64
	srv := httptest.NewServer(Handler(readAll(&reads), Limits{MaxBodyBytes: 1 << 20}))
	defer srv.Close()
	body := &zeros{left: 1 << 30}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/x", struct{ io.Reader }{body})
	require.NoError(t, err)
	req.ContentLength = -1 // unknown: sent chunked
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	msg, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Contains(t, string(msg), "/x: request body is larger than the limit of 1048576 bytes")
	assert.Less(t, body.taken.Load(), int64(64<<20))
}

// TestSmallBodyPasses: a body within the cap reaches the handler whole.
func TestSmallBodyPasses(t *testing.T) {
	var reads atomic.Int64
	srv := httptest.NewServer(Handler(readAll(&reads), Limits{MaxBodyBytes: 1 << 20}))
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL+"/x", "application/json", bytes.NewReader(make([]byte, 100)))
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, []byte{100}, got)
}

// TestStalledBodyTimesOut: a client that sends part of a body and stalls
// does not hold the handler: its read fails once BodyTimeout has passed.
func TestStalledBodyTimesOut(t *testing.T) {
	readErr := make(chan error, 1)
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	}), Limits{BodyTimeout: 200 * time.Millisecond}))
	defer srv.Close()
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { _, _ = pw.Write([]byte(`{"kind":`)) }() // and never more
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/x", pr)
	require.NoError(t, err)
	req.ContentLength = 1000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		if resp, err := srv.Client().Do(req.WithContext(ctx)); err == nil {
			_ = resp.Body.Close()
		}
	}()
	select {
	case err := <-readErr:
		require.Error(t, err)
		var ne interface{ Timeout() bool }
		assert.True(t, errors.As(err, &ne) && ne.Timeout(), "a timeout, got %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the handler is still reading a stalled body")
	}
}

// TestDeadlineLiftedAfterBody: once the body is read, a handler slower than
// BodyTimeout still answers, and its request context is not cancelled.
func TestDeadlineLiftedAfterBody(t *testing.T) {
	const timeout = 100 * time.Millisecond
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			http.Error(w, "cancelled", http.StatusServiceUnavailable)
		case <-time.After(5 * timeout): // a slow answer, e.g. many SubjectAccessReviews
			_, _ = w.Write([]byte("ok"))
		}
	}), Limits{BodyTimeout: timeout}))
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL+"/x", "application/json", bytes.NewReader([]byte("{}")))
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok", string(got))
}
