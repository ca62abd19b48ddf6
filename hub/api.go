package hub

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"flotilla.dev/flotilla/internal/ocm"
	"k8s.io/apimachinery/pkg/types"
)

// The Service the aggregated API's APIServices point at when the hub runs as
// a process (APIAddress): the hub writes it, without selector, and its
// EndpointSlice.
const (
	APIServiceNamespace = ocm.HubNamespace
	APIServiceName      = "flotilla-hub-api"
	// DefaultAPIPort is the aggregated API's port behind WebhookService:
	// the Service's port and the Pods' (manifests/hub).
	DefaultAPIPort = 8443
)

// apiServing says where the aggregated API is served; zero: it is not.
type apiServing struct {
	// bind is host:port to listen on; endpoint the EndpointSlice's address
	// ("" behind a Service that selects the Pods).
	bind, endpoint    string
	port              int
	service           types.NamespacedName
	certFile, keyFile string
	caBundle          []byte
	removeOnStop      bool
}

func (a apiServing) on() bool { return a.bind != "" }

// aggregatedAPI decides where the aggregated API is served: at APIAddress
// with a certificate of its own for its Service's name, or behind
// WebhookService with the webhooks' certificate (which names that Service).
func aggregatedAPI(opts Options, certDir string, caBundle []byte, svcNS, svcName string) (apiServing, func(), error) {
	none := func() {}
	switch {
	case opts.APIAddress != "":
		ip := net.ParseIP(opts.APIAddress)
		if ip == nil || ip.IsLoopback() || ip.IsUnspecified() {
			return apiServing{}, nil, fmt.Errorf("hub: --api-address %q: give an IP of this host that is not loopback (the apiserver reaches the aggregated API at an EndpointSlice, which refuses 127.0.0.0/8)", opts.APIAddress)
		}
		port := opts.APIPort
		if port == 0 {
			var err error
			if port, err = freePort(opts.APIAddress); err != nil {
				return apiServing{}, nil, err
			}
		}
		tmp, err := os.MkdirTemp("", "flotilla-hub-api-")
		if err != nil {
			return apiServing{}, nil, err
		}
		bundle, err := writeSelfSignedCert(tmp, APIServiceName+"."+APIServiceNamespace+".svc")
		if err != nil {
			os.RemoveAll(tmp)
			return apiServing{}, nil, fmt.Errorf("generate the aggregated API's serving certificate: %w", err)
		}
		addr := net.JoinHostPort(opts.APIAddress, strconv.Itoa(port))
		return apiServing{bind: addr, endpoint: addr, port: port, service: types.NamespacedName{Namespace: APIServiceNamespace, Name: APIServiceName},
			certFile: filepath.Join(tmp, "tls.crt"), keyFile: filepath.Join(tmp, "tls.key"), caBundle: bundle, removeOnStop: true}, func() { os.RemoveAll(tmp) }, nil
	case opts.WebhookService != "":
		port := opts.APIPort
		if port == 0 {
			port = DefaultAPIPort
		}
		return apiServing{bind: net.JoinHostPort(opts.WebhookHost, strconv.Itoa(port)), port: port, service: types.NamespacedName{Namespace: svcNS, Name: svcName},
			certFile: filepath.Join(certDir, "tls.crt"), keyFile: filepath.Join(certDir, "tls.key"), caBundle: caBundle}, none, nil
	}
	return apiServing{}, none, nil
}
