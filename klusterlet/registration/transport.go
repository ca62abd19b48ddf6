package registration

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/client-go/util/connrotation"
)

// hubTransport is the one pool of connections to the hub that every hub
// client of the klusterlet shares: the registration agent's lease, status and
// rotation, the addon rounds, the work agent and the watch of the cluster's
// own ManagedCluster. Over HTTP/2 that is one connection per cluster at the
// hub apiserver instead of two (the agent's in-memory credential and the
// files the others read each had a transport of their own): at 5,000 clusters,
// 5,000 connections fewer, each about 45 KB of the hub apiserver's heap and
// two of its goroutines (docs/benchmarks.md, "What Flotilla costs the hub
// apiserver").
//
// Its client certificate is the agent's current one, held in memory: a new
// certificate (rotation, a fresh bootstrap) is presented from the next
// connection on, and every open connection is closed when it changes, so no
// client goes on with the old one. Before, the clients reading the files
// picked a new certificate up at client-go's next file reload (10 s in the
// klusterlet, 5 minutes elsewhere).
type hubTransport struct {
	server string
	ca     []byte
	cert   atomic.Pointer[tls.Certificate]
	dialer *connrotation.Dialer
	rt     http.RoundTripper
}

// dialHub opens the hub transport's TCP connections.
var dialHub = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext

func newHubTransport(server string, ca []byte) (*hubTransport, error) {
	return newHubTransportDialing(server, ca, dialHub)
}

func newHubTransportDialing(server string, ca []byte, dial connrotation.DialFunc) (*hubTransport, error) {
	t := &hubTransport{server: server, ca: bytes.Clone(ca), dialer: connrotation.NewDialer(dial)}
	rt, err := transport.New(&transport.Config{
		TLS:        transport.TLSConfig{CAData: t.ca, GetCertHolder: &transport.GetCertHolder{GetCert: t.current}},
		DialHolder: &transport.DialHolder{Dial: t.dialer.DialContext},
	})
	if err != nil {
		return nil, fmt.Errorf("hub transport for %s: %w", server, err)
	}
	t.rt = rt
	return t, nil
}

// serves: the transport is for this hub address and CA.
func (t *hubTransport) serves(server string, ca []byte) bool {
	return t.server == server && bytes.Equal(t.ca, ca)
}

// current is the certificate presented on a new connection (none before the
// first set).
func (t *hubTransport) current() (*tls.Certificate, error) { return t.cert.Load(), nil }

// set makes certPEM and keyPEM the credential of every connection from now
// on; when they differ from the current one, the open connections are closed.
func (t *hubTransport) set(certPEM, keyPEM []byte) error {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("hub client certificate: %w", err)
	}
	old := t.cert.Swap(&pair)
	if old == nil || !sameLeaf(old, &pair) {
		t.dialer.CloseAll()
	}
	return nil
}

func sameLeaf(a, b *tls.Certificate) bool {
	return len(a.Certificate) > 0 && len(b.Certificate) > 0 && bytes.Equal(a.Certificate[0], b.Certificate[0])
}

// config is a rest.Config over the shared connections. Copies of it (with
// their own rate limits and timeouts) share them too.
func (t *hubTransport) config() *rest.Config {
	return &rest.Config{Host: t.server, Transport: t.rt}
}
