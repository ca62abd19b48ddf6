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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"flotilla.dev/flotilla/test/testenv"
)

// The probes run against a real kube-apiserver through a TCP proxy that can
// cut every connection (an apiserver restart, as the client sees it) or
// freeze them (a connection that stays open and carries nothing).

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

const (
	wait = 30 * time.Second
	tick = 20 * time.Millisecond
)

func TestProbeOnARealAPIServer(t *testing.T) {
	env := testenv.Start(t, testenv.Options{NoHub: true, Clusters: 1})
	admin := env.Clusters[0].Config
	cs := kubernetes.NewForConfigOrDie(admin)
	ctx := context.Background()
	const ns = "watchguard"
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// follow runs the probe through a new proxy and returns the proxy, a
	// count of watches opened, and what follow returned (once).
	follow := func(t *testing.T, p Probe) (*proxy, *atomic.Int32, chan error, context.CancelFunc) {
		px := newProxy(t, admin.Host)
		p.Name, p.Resource, p.Namespace = "cluster", configMaps, ns
		p.Config = rest.CopyConfig(admin)
		p.Config.Host = px.url
		var opened atomic.Int32
		p.opened = func() { opened.Add(1) }
		fctx, cancel := context.WithCancel(ctx)
		out := make(chan error, 1)
		go func() { out <- p.follow(fctx) }()
		t.Cleanup(cancel)
		return px, &opened, out, cancel
	}

	t.Run("a watch that runs out its time is opened again, and the run goes on", func(t *testing.T) {
		var agains atomic.Int32
		p := Probe{Timeout: time.Second, Silence: time.Minute, onVerdict: func(v verdict) {
			if v == again {
				agains.Add(1)
			}
		}}
		_, _, out, cancel := follow(t, p)
		// Changes arrive on the way.
		for i := range 3 {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "c-"}}, metav1.CreateOptions{})
			require.NoError(t, err, "configmap %d", i)
		}
		require.Eventually(t, func() bool { return agains.Load() >= 3 }, wait, tick)
		select {
		case err := <-out:
			t.Fatalf("the probe ended on healthy watches: %v", err)
		default:
		}
		cancel()
		assert.NoError(t, <-out, "ends with its context, no error")
	})

	t.Run("a cut connection is Lost once the apiserver answers again", func(t *testing.T) {
		px, opened, out, _ := follow(t, Probe{Silence: time.Minute})
		require.Eventually(t, func() bool { return opened.Load() >= 1 }, wait, tick)
		px.cut()
		var l *Lost
		require.ErrorAs(t, <-out, &l)
		assert.Equal(t, "cut", l.Reason)
		assert.Equal(t, "cluster", l.Probe)
		assert.Equal(t, "configmaps in watchguard", l.Resource)
		assert.Contains(t, l.Error(), "the connection to the cluster apiserver (watching configmaps in watchguard) was cut")
	})

	t.Run("a connection that carries nothing is Lost as silent", func(t *testing.T) {
		px, opened, out, _ := follow(t, Probe{Silence: 2 * time.Second, Timeout: time.Hour})
		require.Eventually(t, func() bool { return opened.Load() >= 1 }, wait, tick)
		px.freeze()
		var l *Lost
		require.ErrorAs(t, <-out, &l)
		assert.Equal(t, "silent", l.Reason)
		assert.Contains(t, l.Error(), "delivered nothing, not even a bookmark")
	})

	t.Run("an apiserver that is not there at the start is waited for, not Lost", func(t *testing.T) {
		var relists atomic.Int32
		px := newProxy(t, admin.Host)
		px.refuse(true)
		cfg := rest.CopyConfig(admin)
		cfg.Host = px.url
		var opened atomic.Int32
		p := Probe{Name: "cluster", Config: cfg, Resource: configMaps, Namespace: ns, Interval: 50 * time.Millisecond,
			opened: func() { opened.Add(1) }, onVerdict: func(v verdict) {
				if v == relist {
					relists.Add(1)
				}
			}}
		fctx, cancel := context.WithCancel(ctx)
		defer cancel()
		out := make(chan error, 1)
		go func() { out <- p.follow(fctx) }()
		require.Eventually(t, func() bool { return px.refused.Load() >= 3 }, wait, tick, "the probe keeps trying")
		px.refuse(false)
		require.Eventually(t, func() bool { return opened.Load() >= 1 }, wait, tick, "and follows once it answers")
		select {
		case err := <-out:
			t.Fatalf("a slow start ended the probe: %v", err)
		default:
		}
		cancel()
		assert.NoError(t, <-out)
	})

	t.Run("Run starts the body again after a cut, and ends with its context", func(t *testing.T) {
		px := newProxy(t, admin.Host)
		cfg := rest.CopyConfig(admin)
		cfg.Host = px.url
		var opened atomic.Int32
		p := Probe{Name: "cluster", Config: cfg, Resource: configMaps, Namespace: ns, opened: func() { opened.Add(1) }}
		var starts, stops atomic.Int32
		rctx, cancel := context.WithCancel(ctx)
		out := make(chan error, 1)
		go func() {
			out <- Run(rctx, logr.Discard(), []Probe{p}, func(ctx context.Context) error {
				starts.Add(1)
				<-ctx.Done()
				stops.Add(1)
				return ctx.Err()
			})
		}()
		require.Eventually(t, func() bool { return opened.Load() >= 1 && starts.Load() == 1 }, wait, tick)
		px.cut()
		require.Eventually(t, func() bool { return starts.Load() == 2 }, wait, tick, "the body runs again")
		assert.Equal(t, int32(1), stops.Load(), "after the first run ended")
		cancel()
		assert.NoError(t, <-out)
		assert.Equal(t, int32(2), stops.Load())
	})

	t.Run("Run returns the body's own error", func(t *testing.T) {
		boom := errors.New("boom")
		p := Probe{Name: "cluster", Config: admin, Resource: configMaps, Namespace: ns}
		assert.ErrorIs(t, Run(ctx, logr.Discard(), []Probe{p}, func(context.Context) error { return boom }), boom)
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
