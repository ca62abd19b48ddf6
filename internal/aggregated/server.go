package aggregated

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

// Options configures the Server. Every field documents its default.
type Options struct {
	// Config reaches the hub apiserver: the server reads
	// kube-system/extension-apiserver-authentication and writes the Service,
	// EndpointSlice, APIServices and ClusterRoles. Required.
	Config *rest.Config
	// Groups are the group versions served. At least one.
	Groups []Group
	// BindAddress is the host:port the HTTPS server listens on. Required.
	BindAddress string
	// CertFile and KeyFile are the serving certificate, which must name
	// <Service.Name>.<Service.Namespace>.svc, and its key. Required.
	CertFile, KeyFile string
	// CABundle is what the APIServices trust the serving certificate with. Required.
	CABundle []byte
	// Service is the Service the APIServices point at. Required.
	Service types.NamespacedName
	// ServicePort is the Service's port. Default 443.
	ServicePort int32
	// Endpoint, when set, is the address (IP:port, not loopback) the hub
	// apiserver reaches this server at: the server writes the Service without
	// a selector and an EndpointSlice with that one address. Default "": the
	// Service exists and selects the serving Pods.
	Endpoint string
	// RemoveOnStop deletes the APIServices on a stop, when they still point at
	// Service: a stopped process leaves no unavailable group behind (one
	// would stall namespace deletion and warn in every kubectl discovery).
	// Default false: Pods behind a Service keep serving it.
	RemoveOnStop bool
	// Log receives what the server does. Default: discard.
	Log logr.Logger
}

// Server serves the registered groups; see the package documentation.
type Server struct {
	o       Options
	headers *requestHeaders
	authn   authenticator.Request
	kube    kubernetes.Interface
	apis    aggregator.Interface
}

// New checks the options and builds the server; Start runs it.
func New(o Options) (*Server, error) {
	switch {
	case o.Config == nil || o.BindAddress == "" || o.CertFile == "" || o.KeyFile == "" || len(o.CABundle) == 0:
		return nil, errors.New("aggregated API: Options.Config, BindAddress, CertFile, KeyFile and CABundle are required")
	case o.Service.Name == "" || o.Service.Namespace == "":
		return nil, errors.New("aggregated API: Options.Service is required")
	case len(o.Groups) == 0:
		return nil, errors.New("aggregated API: no group to serve")
	}
	for _, g := range o.Groups {
		if g.Name == "" || g.Version == "" || len(g.Resources) == 0 {
			return nil, fmt.Errorf("aggregated API: group %q version %q needs a name, a version and resources", g.Name, g.Version)
		}
		for _, r := range g.Resources {
			if r.Name == "" || r.Kind == "" || r.Handler == nil {
				return nil, fmt.Errorf("aggregated API: a resource of %s needs a name, a kind and a handler", g.APIServiceName())
			}
		}
	}
	if o.ServicePort == 0 {
		o.ServicePort = 443
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	if o.Endpoint != "" {
		host, _, err := net.SplitHostPort(o.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("aggregated API: endpoint %q: %w", o.Endpoint, err)
		}
		if ip := net.ParseIP(host); ip == nil || ip.IsLoopback() || ip.IsUnspecified() {
			return nil, fmt.Errorf("aggregated API: endpoint %q: give an IP of this host that is not loopback (EndpointSlices refuse 127.0.0.0/8 and ::1)", o.Endpoint)
		}
	}
	kube, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return nil, err
	}
	apis, err := aggregator.NewForConfig(o.Config)
	if err != nil {
		return nil, err
	}
	headers, err := newRequestHeaders(kube)
	if err != nil {
		return nil, err
	}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{RequestHeaderConfig: headers.config()}.New()
	if err != nil {
		return nil, err
	}
	return &Server{o: o, headers: headers, authn: authn, kube: kube, apis: apis}, nil
}

// Start serves until ctx ends: it reads the front-proxy settings, listens,
// then registers the Service, EndpointSlice, ClusterRoles and APIServices
// (trying again every 2 s until that succeeds).
func (s *Server) Start(ctx context.Context) error {
	if err := s.headers.start(ctx, s.kube); err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(s.o.CertFile, s.o.KeyFile)
	if err != nil {
		return fmt.Errorf("aggregated API: serving certificate: %w", err)
	}
	l, err := net.Listen("tcp", s.o.BindAddress)
	if err != nil {
		return fmt.Errorf("aggregated API: listen: %w", err)
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20, // X-Remote-Group: one header per group of the user
		// The client certificate is asked for, not required: the
		// request-header authenticator verifies it against the front-proxy CA
		// (which it follows as the ConfigMap changes), and answers 401 without.
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12},
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(l, "", "") }()
	s.o.Log.Info("aggregated API served", "address", l.Addr().String(), "apiservices", s.names())
	// Registration is tried again until it succeeds (replicas race to write
	// the same APIService; the apiserver may be restarting).
	go func() {
		_ = wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
			if err := s.register(ctx); err != nil {
				s.o.Log.Error(err, "register the aggregated API; trying again")
				return false, nil
			}
			s.o.Log.Info("aggregated API registered", "service", s.o.Service.String(), "endpoint", s.o.Endpoint)
			return true, nil
		})
	}()
	select {
	case err := <-served:
		return fmt.Errorf("aggregated API: %w", err)
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(stop)
	if s.o.RemoveOnStop {
		s.unregister(stop)
	}
	return nil
}

// NeedLeaderElection is false: every replica serves.
func (s *Server) NeedLeaderElection() bool { return false }

func (s *Server) names() []string {
	var out []string
	for _, g := range s.o.Groups {
		out = append(out, g.APIServiceName())
	}
	return out
}

// ServeHTTP authenticates the front proxy and the user, then serves
// discovery or the resource's handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	resp, ok, err := s.authn.AuthenticateRequest(req)
	if err != nil || !ok {
		msg := "Unauthorized: this server trusts only the hub apiserver's front proxy; read it through the hub apiserver (kubectl get --raw /apis/...)"
		if err != nil {
			s.o.Log.V(1).Info("request refused", "remote", req.RemoteAddr, "reason", err.Error())
		}
		Error(w, http.StatusUnauthorized, errors.New(msg))
		return
	}
	path := strings.TrimSuffix(req.URL.Path, "/")
	read := req.Method == http.MethodGet || req.Method == http.MethodHead
	if path == "/apis" && read {
		writeJSON(w, http.StatusOK, s.groupList())
		return
	}
	for _, g := range s.o.Groups {
		var r *Resource
		switch {
		case path == "/apis/"+g.Name && read:
			writeJSON(w, http.StatusOK, apiGroup(g))
			return
		case path == g.Path() && read:
			writeJSON(w, http.StatusOK, resourceList(g))
			return
		case strings.HasPrefix(path, g.Path()+"/"):
			r = g.resource(strings.Split(strings.TrimPrefix(path, g.Path()+"/"), "/"))
		}
		if r == nil {
			continue
		}
		switch {
		case read:
		case req.Method == http.MethodPost && r.Create:
			limit := r.MaxBodyBytes
			if limit <= 0 {
				limit = 8 << 20
			}
			req.Body = http.MaxBytesReader(w, req.Body, limit)
		default:
			allow := "GET, HEAD"
			if r.Create {
				allow += ", POST"
			}
			w.Header().Set("Allow", allow)
			Error(w, http.StatusMethodNotAllowed, fmt.Errorf("%s is not supported on %s: it allows %s", req.Method, r.Name, allow))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		r.Handler(w, req, resp.User)
		return
	}
	if !read {
		w.Header().Set("Allow", "GET, HEAD")
		Error(w, http.StatusMethodNotAllowed, fmt.Errorf("%s is not supported: the resources are read-only (GET)", req.Method))
		return
	}
	Error(w, http.StatusNotFound, fmt.Errorf("the server could not find the requested resource %s", req.URL.Path))
}

// resource is the resource a path below the group version names: parts are
// [name, ...] or [namespaces, <namespace>, name, ...].
func (g Group) resource(parts []string) *Resource {
	namespaced := len(parts) >= 3 && parts[0] == "namespaces" && parts[1] != ""
	name := parts[0]
	if namespaced {
		name = parts[2]
	}
	for i := range g.Resources {
		r := &g.Resources[i]
		if r.Name == name && r.Namespaced == namespaced {
			return r
		}
	}
	return nil
}

// Error writes err as a metav1.Status with code, which kubectl prints as
// "Error from server (<reason>): <message>".
func Error(w http.ResponseWriter, code int, err error) {
	reason := metav1.StatusReasonInternalError
	switch code {
	case http.StatusBadRequest:
		reason = metav1.StatusReasonBadRequest
	case http.StatusUnauthorized:
		reason = metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		reason = metav1.StatusReasonForbidden
	case http.StatusNotFound:
		reason = metav1.StatusReasonNotFound
	case http.StatusMethodNotAllowed:
		reason = metav1.StatusReasonMethodNotAllowed
	case http.StatusConflict:
		reason = metav1.StatusReasonConflict
	case http.StatusRequestEntityTooLarge:
		reason = metav1.StatusReasonRequestEntityTooLarge
	case http.StatusServiceUnavailable:
		reason = metav1.StatusReasonServiceUnavailable
	}
	writeJSON(w, code, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: int32(code), Reason: reason, Message: err.Error()})
}
