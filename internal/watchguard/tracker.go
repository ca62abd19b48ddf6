package watchguard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Sign is what Run follows beside the body (a *Tracker).
type Sign interface {
	check() error
	// reset starts a run: what was seen of the last one is forgotten. Run
	// calls it before the body starts.
	reset()
	// follow runs until ctx ends (nil) or the connection is lost (*Lost).
	follow(ctx context.Context) error
}

// Tracker follows the watches the body's caches open through one apiserver
// connection, and says Lost on the signs a watch of its own would give (see the package doc): it costs the apiserver nothing.
//
// What it does not take for a cut, unlike a watch of its own: a watch the
// apiserver refused with an answer (429 from a loaded hub, 410 Gone, 5xx):
// the connection works, and the informer lists and watches again on its own;
// a watch the client itself closed (an informer stopping); a watch the
// apiserver ended with an ERROR event (410 Gone, a watch-list whose
// freshness wait timed out), read from the stream's last bytes in JSON or
// protobuf. Only a stream that has carried a bookmark can go silent.
type Tracker struct {
	name    string
	silence time.Duration

	mu          sync.Mutex
	streams     map[*stream]struct{}
	established bool // a watch has been open in this run
	cut         bool // a watch broke after that; Lost once the apiserver answers
	answered    bool // and it has answered since
	changed     chan struct{}
	// onEnd, when set, sees how each watch ended (tests).
	onEnd func(verdict)
}

// NewTracker returns a tracker named after its apiserver ("hub",
// "cluster"), for logs and Lost, and a copy of cfg whose requests it
// follows. Silence 0 is DefaultSilence.
func NewTracker(name string, cfg *rest.Config, silence time.Duration) (*Tracker, *rest.Config) {
	if silence <= 0 {
		silence = DefaultSilence
	}
	t := &Tracker{name: name, silence: silence, streams: map[*stream]struct{}{}, changed: make(chan struct{}, 1)}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &tracked{t: t, next: rt} })
	return t, cfg
}

func (t *Tracker) check() error {
	if t == nil || t.name == "" {
		return errors.New("watchguard: a tracker needs a name (NewTracker)")
	}
	return nil
}

func (t *Tracker) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.established, t.cut, t.answered = false, false, false
	for s := range t.streams {
		s.stale = true // the last run's: its verdicts no longer count
	}
}

func (t *Tracker) notify() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

func (t *Tracker) follow(ctx context.Context) error {
	tick := time.NewTicker(max(t.silence/8, 10*time.Millisecond))
	defer tick.Stop()
	for {
		if l := t.lost(time.Now()); l != nil {
			return l
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.changed:
		case <-tick.C:
		}
	}
}

// lost says what the run has come to at now: nil while it is well.
func (t *Tracker) lost(now time.Time) *Lost {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cut && t.answered {
		return &Lost{Probe: t.name, Reason: cutOff.String()}
	}
	for s := range t.streams {
		if !s.stale && s.bookmarked && now.Sub(s.last) >= t.silence {
			return &Lost{Probe: t.name, Resource: s.what, Reason: dead.String()}
		}
	}
	return nil
}

// bookmarkedStreams counts the open streams of this run that have carried a
// bookmark (tests).
func (t *Tracker) bookmarkedStreams() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for s := range t.streams {
		if !s.stale && s.bookmarked {
			n++
		}
	}
	return n
}

// answer: the apiserver answered a request (any status: it is there).
func (t *Tracker) answer() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cut && !t.answered {
		t.answered = true
		t.notify()
	}
}

// openFailed: a watch could not reach the apiserver at all.
func (t *Tracker) openFailed() {
	t.mu.Lock()
	established := t.established
	t.mu.Unlock()
	t.verdict(nil, decide(openFailed, false, established))
}

func (t *Tracker) open(what string, asked time.Duration) *stream {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	s := &stream{t: t, what: what, asked: asked, started: now, last: now}
	t.streams[s] = struct{}{}
	t.established = true
	return s
}

// verdict records how stream s (nil: a watch that never opened) ended.
func (t *Tracker) verdict(s *stream, v verdict) {
	t.mu.Lock()
	defer t.mu.Unlock()
	stale := false
	if s != nil {
		stale = s.stale
		delete(t.streams, s)
	}
	if t.onEnd != nil {
		t.onEnd(v)
	}
	if v == cutOff && !stale && !t.cut {
		t.cut, t.answered = true, false
	}
	t.notify()
}

// tracked is the transport of a tracked config.
type tracked struct {
	t    *Tracker
	next http.RoundTripper
}

func (r *tracked) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	if w := q.Get("watch"); w != "true" && w != "1" {
		resp, err := r.next.RoundTrip(req)
		if err == nil {
			r.t.answer()
		}
		return resp, err
	}
	var asked time.Duration
	if secs, err := strconv.ParseInt(q.Get("timeoutSeconds"), 10, 64); err == nil && secs > 0 {
		asked = time.Duration(secs) * time.Second
	}
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		if req.Context().Err() == nil {
			r.t.openFailed()
		}
		return resp, err
	}
	r.t.answer()
	if resp.StatusCode != http.StatusOK {
		// Refused with an answer: the informer lists again on its own.
		return resp, nil
	}
	s := r.t.open(req.URL.Path, asked)
	resp.Body = &trackedBody{ReadCloser: resp.Body, s: s, ctx: req.Context()}
	return resp, nil
}

// stream is one open watch.
type stream struct {
	t       *Tracker
	what    string
	asked   time.Duration
	started time.Time
	last    time.Time // guarded by t.mu
	stale   bool      // guarded by t.mu: opened in an earlier run
	// bookmarked: a bookmark has come on this stream (guarded by t.mu).
	// Only such a stream can go silent: a resource served without the
	// apiserver's watch cache (an aggregated API, a watch from etcd) sends
	// none, and a quiet one would read as dead every few minutes.
	bookmarked bool
}

// tail is how much of a stream's end is kept: enough for the ERROR event a
// watch ends with.
const tail = 512

var (
	// In JSON the event type is a string, "ERROR" or "BOOKMARK"; in
	// protobuf its raw bytes: the same words match both.
	errorWord    = []byte("ERROR")
	bookmarkWord = []byte("BOOKMARK")
)

type trackedBody struct {
	io.ReadCloser
	s    *stream
	ctx  context.Context
	tail []byte // the last bytes read, at most tail
	once sync.Once
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		got := p[:n]
		b.s.t.mu.Lock()
		b.s.last = time.Now()
		if !b.s.bookmarked { // once one has come, reads are not searched
			b.s.bookmarked = bytes.Contains(got, bookmarkWord) || splitAcross(b.tail, got, bookmarkWord)
		}
		b.s.t.mu.Unlock()
		b.keep(got)
	}
	if err != nil {
		b.end(err)
	}
	return n, err
}

// keep holds on to the last bytes read, at most tail.
func (b *trackedBody) keep(got []byte) {
	if len(got) >= tail {
		b.tail = append(b.tail[:0], got[len(got)-tail:]...)
		return
	}
	if over := len(b.tail) + len(got) - tail; over > 0 {
		b.tail = append(b.tail[:0], b.tail[over:]...)
	}
	b.tail = append(b.tail, got...)
}

// splitAcross: word begins at the end of before and ends at the start of
// after (a read boundary cut it in two).
func splitAcross(before, after, word []byte) bool {
	for i := 1; i < len(word); i++ {
		if bytes.HasSuffix(before, word[:i]) && bytes.HasPrefix(after, word[i:]) {
			return true
		}
	}
	return false
}

func (b *trackedBody) Close() error {
	b.once.Do(func() { b.s.t.verdict(b.s, again) }) // closed by the client: nothing to say
	return b.ReadCloser.Close()
}

// end reads how the stream ended into a verdict.
func (b *trackedBody) end(err error) {
	b.once.Do(func() {
		if b.ctx.Err() != nil { // the client stopped it
			b.s.t.verdict(b.s, again)
			return
		}
		e, early := closed, false
		switch {
		case !errors.Is(err, io.EOF):
			e = errorEvent // the connection broke mid-stream
		case bytes.Contains(b.tail, errorWord):
			// The apiserver ended the watch with an ERROR event (410 Gone,
			// a watch-list's freshness wait timed out, a failed conversion):
			// it answered, and the informer lists again on its own.
			e = expired
		case b.s.asked > 0:
			early = endedEarly(time.Since(b.s.started), b.s.asked)
		}
		b.s.t.verdict(b.s, decide(e, early, true))
	})
}
