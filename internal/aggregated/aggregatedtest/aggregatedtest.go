// Package aggregatedtest serves aggregated API groups for tests: on an
// address of this host that is not loopback, with a serving certificate of
// a throwaway CA, registered with a real hub apiserver, and waits until the
// apiserver finds every APIService Available.
package aggregatedtest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"flotilla.dev/flotilla/internal/aggregated"
	"flotilla.dev/flotilla/internal/pki"
)

// Serve starts an aggregated server for groups behind Service svc of the
// hub apiserver cfg reaches, keeping its certificate in dir, and returns
// once every group's APIService is Available (at most a minute). stopped
// receives the server's end when ctx ends; url is the server's own
// https://<ip>:<port>, for tests that call it directly.
func Serve(ctx context.Context, cfg *rest.Config, dir string, svc types.NamespacedName, groups ...aggregated.Group) (url string, stopped <-chan error, err error) {
	ip, err := aggregated.HostIP()
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ca, err := pki.NewCA("test-serving-ca", time.Hour)
	if err != nil {
		return "", nil, err
	}
	kp, err := ca.Issue(pki.CertRequest{CommonName: svc.Name, DNSNames: []string{svc.Name + "." + svc.Namespace + ".svc"}})
	if err != nil {
		return "", nil, err
	}
	if err := pki.WriteFiles(dir, "serving", kp.CertPEM, kp.KeyPEM); err != nil {
		return "", nil, err
	}
	addr := net.JoinHostPort(ip.String(), strconv.Itoa(port))
	srv, err := aggregated.New(aggregated.Options{Config: cfg, Groups: groups, BindAddress: addr,
		CertFile: filepath.Join(dir, "serving.crt"), KeyFile: filepath.Join(dir, "serving.key"), CABundle: ca.CertPEM,
		Service: svc, Endpoint: addr, RemoveOnStop: true})
	if err != nil {
		return "", nil, err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	for _, g := range groups {
		if err := WaitAvailable(ctx, cfg, g.APIServiceName(), time.Minute); err != nil {
			select {
			case serr := <-done:
				return "", nil, fmt.Errorf("stopped: %v (%w)", serr, err)
			default:
			}
			return "", done, err
		}
	}
	return "https://" + addr, done, nil
}

// WaitAvailable waits until the APIService name is Available, at most
// timeout.
func WaitAvailable(ctx context.Context, cfg *rest.Config, name string, timeout time.Duration) error {
	apis, err := aggregator.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := apis.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		for _, c := range s.Status.Conditions {
			if c.Type == apiregistrationv1.Available {
				last = fmt.Errorf("%s: %s", c.Reason, c.Message)
				return c.Status == apiregistrationv1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("APIService %s not Available within %s: %v", name, timeout, last)
	}
	return nil
}
