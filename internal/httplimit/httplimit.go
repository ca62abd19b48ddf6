package httplimit

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Limits bound one request. Every field documents its default.
type Limits struct {
	// MaxBodyBytes is the largest request body. Default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// BodyTimeout is how long the whole body may take to arrive, from the
	// moment the handler starts. Default DefaultBodyTimeout.
	BodyTimeout time.Duration
}

const (
	// DefaultMaxBodyBytes (8 MiB) is above what the apiserver sends in an
	// AdmissionReview (an old and a new object of at most 3 MiB each, the
	// etcd limit; controller-runtime's own admission cap is 7 MiB).
	DefaultMaxBodyBytes = 8 << 20
	// DefaultBodyTimeout is 30 s: the apiserver gives a webhook at most 30 s
	// for the whole call.
	DefaultBodyTimeout = 30 * time.Second
)

func (l Limits) withDefaults() Limits {
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = DefaultBodyTimeout
	}
	return l
}

// TooLarge is the message of a refused body: it names the path, the size
// and the limit.
func TooLarge(path string, size, limit int64) string {
	if size < 0 {
		return fmt.Sprintf("%s: request body is larger than the limit of %d bytes", path, limit)
	}
	return fmt.Sprintf("%s: request body of %d bytes is larger than the limit of %d bytes", path, size, limit)
}

// IsTooLarge reports whether err comes from reading past the cap of a body
// that Handler bounded.
func IsTooLarge(err error) bool {
	var mb *http.MaxBytesError
	return errors.As(err, &mb)
}

// Handler serves next with l's bounds. A declared Content-Length above
// MaxBodyBytes is answered 413 at once, without reading the body; a body
// without one fails the handler's read past MaxBodyBytes (IsTooLarge). The
// read deadline is lifted once the body has been read, so a slow answer is
// not cut short.
func Handler(next http.Handler, l Limits) http.Handler {
	l = l.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > l.MaxBodyBytes {
			// Tell an HTTP/1 client not to send the rest on this connection.
			w.Header().Set("Connection", "close")
			http.Error(w, TooLarge(r.URL.Path, r.ContentLength, l.MaxBodyBytes), http.StatusRequestEntityTooLarge)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			// Not every ResponseWriter supports deadlines (a test recorder
			// does not); the cap on the size holds either way.
			if rc.SetReadDeadline(time.Now().Add(l.BodyTimeout)) == nil {
				r.Body = &lifting{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
			}
			r.Body = http.MaxBytesReader(w, r.Body, l.MaxBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}

// lifting calls lift once, when the body has been read to its end.
type lifting struct {
	io.ReadCloser
	lift func()
	done bool
}

func (b *lifting) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.lift()
	}
	return n, err
}

// Server is a webhook.Server whose every registered handler is bounded: by
// Paths[path] when set, else by Default.
type Server struct {
	webhook.Server
	Default Limits
	Paths   map[string]Limits
}

var _ webhook.Server = Server{}

// Register registers hook at path, bounded.
func (s Server) Register(path string, hook http.Handler) {
	l, ok := s.Paths[path]
	if !ok {
		l = s.Default
	}
	s.Server.Register(path, Handler(hook, l))
}
