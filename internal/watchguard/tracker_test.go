package watchguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"flotilla.dev/flotilla/test/testenv"
)

// A Tracker follows the watches an informer already holds, on a real
// kube-apiserver behind a TCP proxy that can cut every connection (an
// apiserver restart, as the client sees it), freeze them (a connection that
// stays open and carries nothing) or refuse new ones.

const (
	wait = 30 * time.Second
	tick = 20 * time.Millisecond
)

// endings counts a tracker's verdicts on ended watches.
type endings struct {
	mu sync.Mutex
	n  map[verdict]int
}

func (e *endings) see(v verdict) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == nil {
		e.n = map[verdict]int{}
	}
	e.n[v]++
}

func (e *endings) count(v verdict) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n[v]
}

func TestTrackerOnARealAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{NoHub: true, Clusters: 1})
	admin := env.Clusters[0].Config
	cs := kubernetes.NewForConfigOrDie(admin)
	ctx := context.Background()
	const ns = "tracker"
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	newConfigMap := func(t *testing.T) {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "c-"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	// track makes a tracker over a new proxy and follows it; it returns the
	// proxy, the tracked config, the tracker's verdicts and what follow
	// returned (once).
	trackWith := func(t *testing.T, silence time.Duration) (*proxy, *rest.Config, *endings, chan error, *Tracker) {
		px := newProxy(t, admin.Host)
		cfg := rest.CopyConfig(admin)
		cfg.Host = px.url
		tr, tracked := NewTracker("cluster", cfg, silence)
		ends := &endings{}
		tr.onEnd = ends.see
		tr.reset()
		fctx, cancel := context.WithCancel(ctx)
		out := make(chan error, 1)
		go func() { out <- tr.follow(fctx) }()
		t.Cleanup(cancel)
		return px, tracked, ends, out, tr
	}
	track := func(t *testing.T, silence time.Duration) (*proxy, *rest.Config, *endings, chan error) {
		px, cfg, ends, out, _ := trackWith(t, silence)
		return px, cfg, ends, out
	}
	// inform runs a ConfigMap informer of ns over cfg until its context
	// ends, and waits until it has synced.
	inform := func(t *testing.T, cfg *rest.Config) (cache.SharedIndexInformer, context.CancelFunc) {
		ictx, cancel := context.WithCancel(ctx)
		t.Cleanup(cancel)
		f := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(cfg), 0, informers.WithNamespace(ns))
		inf := f.Core().V1().ConfigMaps().Informer()
		f.Start(ictx.Done())
		require.True(t, cache.WaitForCacheSync(ictx.Done(), inf.HasSynced))
		return inf, cancel
	}
	stillRunning := func(t *testing.T, out chan error) {
		t.Helper()
		select {
		case err := <-out:
			t.Fatalf("the tracker ended on healthy watches: %v", err)
		default:
		}
	}

	t.Run("watches that run out their time are not Lost", func(t *testing.T) {
		_, cfg, ends, out := track(t, time.Minute)
		tcs := kubernetes.NewForConfigOrDie(cfg)
		for range 3 {
			secs := int64(1)
			w, err := tcs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{TimeoutSeconds: &secs, AllowWatchBookmarks: true})
			require.NoError(t, err)
			newConfigMap(t) // a change on the way
			for range w.ResultChan() {
			}
		}
		require.Eventually(t, func() bool { return ends.count(again) == 3 }, wait, tick)
		stillRunning(t, out)
	})

	t.Run("an informer's cut connection is Lost once the apiserver answers again", func(t *testing.T) {
		px, cfg, _, out := track(t, time.Minute)
		inform(t, cfg)
		px.cut()
		var l *Lost
		require.ErrorAs(t, <-out, &l)
		assert.Equal(t, "cut", l.Reason)
		assert.Equal(t, "cluster", l.Probe)
		assert.Contains(t, l.Error(), "the connection to the cluster apiserver was cut while the agent's watches depended on it")
	})

	t.Run("an informer's connection that carries nothing is Lost as silent", func(t *testing.T) {
		px, cfg, _, out, tr := trackWith(t, 2*time.Second)
		inform(t, cfg)
		// Silence counts once the stream has carried a bookmark (a watch-list
		// ends its initial events with one; else the cacher's, each minute).
		require.Eventually(t, func() bool { return tr.bookmarkedStreams() >= 1 }, 3*time.Minute, tick)
		px.freeze()
		var l *Lost
		require.ErrorAs(t, <-out, &l)
		assert.Equal(t, "silent", l.Reason)
		assert.Contains(t, l.Error(), "/api/v1/namespaces/tracker/configmaps")
		assert.Contains(t, l.Error(), "delivered nothing, not even a bookmark")
		px.thaw()
	})

	t.Run("a watch without bookmarks may be quiet longer than the silence", func(t *testing.T) {
		_, cfg, ends, out := track(t, time.Second)
		secs := int64(3)
		w, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{TimeoutSeconds: &secs})
		require.NoError(t, err)
		for range w.ResultChan() { // three quiet seconds, then the server ends it
		}
		require.Eventually(t, func() bool { return ends.count(again) == 1 }, wait, tick)
		stillRunning(t, out)
	})

	t.Run("an informer that stops closes its watch: not Lost", func(t *testing.T) {
		_, cfg, ends, out := track(t, time.Minute)
		_, stop := inform(t, cfg)
		stop()
		require.Eventually(t, func() bool { return ends.count(again) >= 1 }, wait, tick)
		stillRunning(t, out)
		// A new informer on the same connection carries on.
		inform(t, cfg)
		stillRunning(t, out)
	})

	t.Run("a watch refused with an answer is not a cut", func(t *testing.T) {
		_, cfg, ends, out := track(t, time.Minute)
		inform(t, cfg) // watches are open: a cut would count
		tcs := kubernetes.NewForConfigOrDie(cfg)
		_, err := tcs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces", ns, "nothings").Param("watch", "true").Watch(ctx)
		require.Error(t, err, "no such resource: 404")
		assert.Zero(t, ends.count(cutOff))
		// The tracker is still well: a healthy watch that runs out is seen, and
		// nothing was Lost.
		secs := int64(1)
		w, err := tcs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{TimeoutSeconds: &secs})
		require.NoError(t, err)
		for range w.ResultChan() {
		}
		require.Eventually(t, func() bool { return ends.count(again) >= 1 }, wait, tick)
		stillRunning(t, out)
	})

	t.Run("an apiserver that is not there at the start is waited for, not Lost", func(t *testing.T) {
		px, cfg, _, out := track(t, time.Minute)
		px.refuse(true)
		ictx, cancel := context.WithCancel(ctx)
		defer cancel()
		f := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(cfg), 0, informers.WithNamespace(ns))
		inf := f.Core().V1().ConfigMaps().Informer()
		f.Start(ictx.Done())
		require.Eventually(t, func() bool { return px.refused.Load() >= 2 }, wait, tick, "the informer keeps trying")
		px.refuse(false)
		require.True(t, cache.WaitForCacheSync(ictx.Done(), inf.HasSynced), "and syncs once it answers")
		stillRunning(t, out)
	})

	t.Run("Run starts the body again after a cut of its own watches", func(t *testing.T) {
		px := newProxy(t, admin.Host)
		cfg := rest.CopyConfig(admin)
		cfg.Host = px.url
		tr, tracked := NewTracker("cluster", cfg, 0)
		var starts, synced atomic.Int32
		rctx, cancel := context.WithCancel(ctx)
		out := make(chan error, 1)
		go func() {
			out <- Run(rctx, logr.Discard(), []Sign{tr}, func(ctx context.Context) error {
				starts.Add(1)
				f := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(tracked), 0, informers.WithNamespace(ns))
				inf := f.Core().V1().ConfigMaps().Informer()
				f.Start(ctx.Done())
				if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
					synced.Add(1)
				}
				<-ctx.Done()
				f.Shutdown()
				return nil
			})
		}()
		require.Eventually(t, func() bool { return synced.Load() == 1 }, wait, tick)
		px.cut()
		require.Eventually(t, func() bool { return starts.Load() == 2 && synced.Load() == 2 }, wait, tick,
			"the body runs again, its caches listed afresh")
		cancel()
		assert.NoError(t, <-out)
	})

	t.Run("a tracker needs a name", func(t *testing.T) {
		assert.ErrorContains(t, Run(ctx, logr.Discard(), []Sign{&Tracker{}}, func(context.Context) error { return nil }), "needs a name")
	})
}

// proxy forwards TCP to an apiserver; it can cut every connection, freeze
// them (they stay open and carry nothing), or refuse new ones.
type proxy struct {
	url     string
	target  string
	ln      net.Listener
	mu      sync.Mutex
	conns   []net.Conn
	frozen  chan struct{} // closed while not frozen
	refusal atomic.Bool
	refused atomic.Int32
}

func newProxy(t *testing.T, apiserver string) *proxy {
	u, err := url.Parse(apiserver)
	require.NoError(t, err)
	host, _, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	// The same address as the apiserver, so its certificate holds.
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	require.NoError(t, err)
	open := make(chan struct{})
	close(open)
	p := &proxy{url: "https://" + ln.Addr().String(), target: u.Host, ln: ln, frozen: open}
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.thaw()
		p.cut()
	})
	return p
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.refusal.Load() {
			p.refused.Add(1)
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// pipe copies from src to dst, holding every chunk while frozen.
func (p *proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.frozen
			p.mu.Unlock()
			<-gate
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_ = dst.Close()
			}
			return
		}
	}
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *proxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.frozen:
		p.frozen = make(chan struct{})
	default:
	}
}

func (p *proxy) thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.frozen:
	default:
		close(p.frozen)
	}
}

func (p *proxy) refuse(on bool) { p.refusal.Store(on) }
