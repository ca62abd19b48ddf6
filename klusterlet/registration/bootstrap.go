package registration

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/internal/ocm"
)

// MaxPendingCSRs: the agent makes no new CSR while this many of its cluster's are pending.
const MaxPendingCSRs = 10

// isCertificateError reports TLS verification failures (for example a hub CA
// that changed), which a retry with the same credential cannot fix.
func isCertificateError(err error) bool {
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	return errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &hostname) ||
		strings.Contains(err.Error(), "x509: ") || strings.Contains(err.Error(), "tls: ")
}

// bootstrap registers the cluster with the bootstrap kubeconfig and waits for
// its first certificate. It returns the new contents of hub-kubeconfig-secret.
func (a *Agent) bootstrap(ctx context.Context) (map[string][]byte, error) {
	cfg, kubeconfig, err := a.bootstrapConfig(ctx)
	if err != nil {
		return nil, err
	}
	cfg = withTimeout(cfg)
	clusters, err := clusterclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := a.ensureManagedCluster(ctx, clusters); err != nil {
		return nil, err
	}
	server, ca, err := hubServer(kubeconfig)
	if err != nil {
		return nil, err
	}
	return a.requestCertificate(ctx, cfg, server, ca)
}

// ensureManagedCluster creates the ManagedCluster, or checks that an existing
// one was not registered by a different managed cluster.
func (a *Agent) ensureManagedCluster(ctx context.Context, clusters clusterclient.Interface) error {
	name := a.opts.ClusterName
	existing, err := clusters.ClusterV1().ManagedClusters().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		if owner := existing.Annotations[ClusterIDAnnotation]; owner != "" && owner != a.clusterID {
			return fmt.Errorf("ManagedCluster %q on the hub belongs to another managed cluster (id %s, this one is %s): pick another cluster name, or delete the ManagedCluster on the hub first", name, owner, a.clusterID)
		}
		return nil
	case !apierrors.IsNotFound(err):
		return describeHubError("read ManagedCluster "+name, err)
	}
	spokeCA := a.opts.SpokeConfig.CAData
	if len(spokeCA) == 0 && a.opts.SpokeConfig.CAFile != "" {
		// In-cluster configs name a file.
		spokeCA, _ = os.ReadFile(a.opts.SpokeConfig.CAFile)
	}
	mc := &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{ClusterIDAnnotation: a.clusterID}},
		Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: false, LeaseDurationSeconds: a.opts.LeaseDurationSeconds},
	}
	for _, u := range a.opts.ExternalServerURLs {
		mc.Spec.ManagedClusterClientConfigs = append(mc.Spec.ManagedClusterClientConfigs, clusterv1.ClientConfig{URL: u, CABundle: spokeCA})
	}
	if _, err := clusters.ClusterV1().ManagedClusters().Create(ctx, mc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return describeHubError("create ManagedCluster "+name, err)
	}
	a.log.Info("created ManagedCluster on the hub; waiting to be accepted (flotilla accept --clusters " + name + ")")
	return nil
}

// describeHubError turns hub errors into advice.
func describeHubError(what string, err error) error {
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s: the hub rejected the credential (bootstrap token expired or wrong? run `flotilla get token` on the hub): %w", what, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: the credential lacks permission on the hub: %w", what, err)
	case isCertificateError(err):
		return fmt.Errorf("%s: the hub's certificate is not trusted with the CA in the kubeconfig (wrong CA or hub address?): %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// requestCertificate gets a certificate for the agent using cfg (bootstrap or
// current hub credential). The private key is kept in the secret while the CSR
// is pending so a restart reuses the CSR instead of making another.
func (a *Agent) requestCertificate(ctx context.Context, cfg *rest.Config, server string, ca []byte) (map[string][]byte, error) {
	hub, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	watcher, err := kubernetes.NewForConfig(watchConfig(cfg))
	if err != nil {
		return nil, err
	}
	sec, err := a.loadSecret(ctx)
	if err != nil {
		return nil, err
	}
	key := sec.Data[keyPending]
	if _, perr := parseKey(key); perr != nil {
		if key, err = newKey(); err != nil {
			return nil, err
		}
		if err := a.saveSecret(ctx, map[string][]byte{keyPending: key}); err != nil {
			return nil, err
		}
	}
	name, err := a.findOrCreateCSR(ctx, hub, key)
	if err != nil {
		return nil, err
	}
	a.log.Info("waiting for the certificate", "csr", name)
	certPEM, err := waitForCertificate(ctx, hub, watcher, name)
	if err != nil {
		return nil, err
	}
	if _, err := checkIssued(certPEM, key, a.subject()); err != nil {
		// Useless certificate: start over with a new key.
		_ = a.saveSecret(ctx, map[string][]byte{keyPending: nil})
		return nil, fmt.Errorf("CSR %s: %w", name, err)
	}
	kubeconfig, err := HubKubeconfig(server, ca)
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{KeyKubeconfig: kubeconfig, KeyCert: certPEM, KeyKey: key, keyPending: nil}
	if err := a.saveSecret(ctx, data); err != nil {
		return nil, err
	}
	a.log.Info("received a hub certificate", "csr", name)
	return data, nil
}

// findOrCreateCSR returns the name of a pending CSR made with key, creating one
// when there is none (unless too many are pending already).
func (a *Agent) findOrCreateCSR(ctx context.Context, hub kubernetes.Interface, key []byte) (string, error) {
	csrs := hub.CertificatesV1().CertificateSigningRequests()
	list, err := csrs.List(ctx, metav1.ListOptions{LabelSelector: ocm.ClusterNameLabel + "=" + a.opts.ClusterName})
	if err != nil {
		return "", describeHubError("list CSRs", err)
	}
	requester := whoAmI(ctx, hub)
	pending := 0
	for i := range list.Items {
		csr := &list.Items[i]
		if failed(csr) {
			continue
		}
		if requestMatchesKey(csr, key, a.subject()) {
			return csr.Name, nil
		}
		// Only this agent's own pending CSRs count: CSRs others filed under the
		// cluster's label must not stop it from asking.
		if len(csr.Status.Certificate) == 0 && ownCSR(csr, a.subject(), requester) {
			pending++
		}
	}
	if pending >= MaxPendingCSRs {
		return "", fmt.Errorf("%d CSRs of this agent (%s) are already pending on the hub; not creating another (approve or delete them)", pending, a.subject().CommonName)
	}
	csr, err := BuildCSR(a.opts.ClusterName, a.agentName, key, a.opts.ClientCertExpirationSeconds)
	if err != nil {
		return "", err
	}
	created, err := csrs.Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		return "", describeHubError("create CSR", err)
	}
	a.log.Info("created CSR", "csr", created.Name)
	return created.Name, nil
}

// whoAmI is the user name the hub sees for this client ("" when the hub cannot say).
func whoAmI(ctx context.Context, hub kubernetes.Interface) string {
	r, err := hub.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return ""
	}
	return r.Status.UserInfo.Username
}

func failed(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
			return true
		}
	}
	return false
}

// csrWatchSeconds is how long one watch of the agent's CSR lasts on the hub
// before the agent lists it again: minutes, as an informer's watch. A
// cluster waits for its certificate as long as the hub takes to accept it
// (minutes, when thousands join at once).
const csrWatchSeconds = int64(300)

// watchConfig is cfg for long-running watches: no client-side request
// timeout (cfg's bounds each whole request, a watch included, which then ends
// after that many seconds however long it was asked to last).
func watchConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Timeout = 0
	return c
}

// waitForCertificate watches the named CSR until it carries a certificate, is
// denied or failed, is deleted, or ctx ends. hub reads it; watcher, a client
// without a request timeout (watchConfig), watches it for csrWatchSeconds at
// a time: a watch cut every few seconds by the client's timeout made every
// waiting agent list and watch its CSR again every few seconds, thousands of
// them at once on a hub accepting a large fleet.
func waitForCertificate(ctx context.Context, hub, watcher kubernetes.Interface, name string) ([]byte, error) {
	csrs := hub.CertificatesV1().CertificateSigningRequests()
	selector := "metadata.name=" + name
	for {
		list, err := csrs.List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return nil, describeHubError("read CSR "+name, err)
		}
		if len(list.Items) == 0 {
			return nil, fmt.Errorf("CSR %s was deleted before it was signed", name)
		}
		if cert, err := csrResult(&list.Items[0]); cert != nil || err != nil {
			return cert, err
		}
		timeout := csrWatchSeconds
		w, err := watcher.CertificatesV1().CertificateSigningRequests().Watch(ctx, metav1.ListOptions{FieldSelector: selector,
			ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
		if err != nil {
			return nil, describeHubError("watch CSR "+name, err)
		}
		cert, err := watchCSR(ctx, w, name)
		w.Stop()
		if cert != nil || err != nil {
			return cert, err
		}
		// The watch ended (timeout, hub restart): list again.
	}
}

func watchCSR(ctx context.Context, w watch.Interface, name string) ([]byte, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, nil
			}
			csr, isCSR := ev.Object.(*certificatesv1.CertificateSigningRequest)
			switch {
			case ev.Type == watch.Deleted:
				return nil, fmt.Errorf("CSR %s was deleted before it was signed", name)
			case ev.Type == watch.Error:
				return nil, nil
			case isCSR:
				if cert, err := csrResult(csr); cert != nil || err != nil {
					return cert, err
				}
			}
		}
	}
}

func csrResult(csr *certificatesv1.CertificateSigningRequest) ([]byte, error) {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
			return nil, fmt.Errorf("CSR %s was %s: %s %s", csr.Name, c.Type, c.Reason, c.Message)
		}
	}
	if len(csr.Status.Certificate) > 0 {
		return csr.Status.Certificate, nil
	}
	return nil, nil
}
