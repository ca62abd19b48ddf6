// Package join is `flotilla join` and `flotilla unjoin`, run against a managed
// cluster: join checks the hub address, CA and bootstrap token before it writes
// anything, then writes the bootstrap kubeconfig secret and (unless the agent runs
// as a local process) the klusterlet's namespace, ServiceAccount, RBAC and
// Deployment from manifests/klusterlet.
package join

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/internal/fileinput"
	"flotilla.dev/flotilla/internal/image"
	"flotilla.dev/flotilla/internal/pki"
	"flotilla.dev/flotilla/klusterlet/registration"
	"flotilla.dev/flotilla/manifests"
)

// DefaultImage is the klusterlet image written into the Deployment when none is given.
var DefaultImage = image.Ref(image.DefaultRegistry, "latest")

// ImageFor picks the klusterlet image as clusteradm does: an explicit image
// wins; else <registry>/flotilla:<bundleVersion>, bundleVersion defaulting to
// version. It refuses a registry or version that cannot form an image name.
func ImageFor(explicit, registry, bundleVersion, version string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	registry = strings.TrimSuffix(registry, "/")
	if registry == "" {
		registry = image.DefaultRegistry
	}
	if strings.ContainsAny(registry, " :@") && !registryWithPort.MatchString(registry) {
		return "", fmt.Errorf("--image-registry %q is not a registry path (like ghcr.io/flotilla-dev or registry.local:5000/ocm)", registry)
	}
	if bundleVersion == "" {
		bundleVersion = version
	}
	if !tagPattern.MatchString(bundleVersion) {
		return "", fmt.Errorf("--bundle-version %q is not an image tag (letters, digits, '_', '.', '-'; at most 128)", bundleVersion)
	}
	return image.Ref(registry, bundleVersion), nil
}

var (
	tagPattern       = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	registryWithPort = regexp.MustCompile(`^[a-z0-9.-]+:[0-9]+(/[a-z0-9._/-]+)?$`)
)

// Options configures Join. Every field documents its default.
type Options struct {
	// SpokeConfig reaches the managed cluster as an admin. Required.
	SpokeConfig *rest.Config
	// HubAPIServer is the hub's https URL. Required.
	HubAPIServer string
	// HubToken is the bootstrap token from `flotilla init` or `flotilla get token`. Required.
	HubToken string
	// CAFile is the hub's CA bundle. Default: read from the hub's
	// kube-public/cluster-info and checked against the hub's certificate.
	CAFile string
	// CAHash pins the hub CA: sha256:<hex> of the CA certificate's
	// SubjectPublicKeyInfo, as printed by `flotilla init`. When set, join refuses
	// a CA (from cluster-info or CAFile) whose hash differs. Default "": the CA
	// from cluster-info is trusted on first use (with a warning).
	CAHash string
	// ClusterName is the managed cluster's name on the hub (a DNS label). Required.
	ClusterName string
	// AgentNamespace on the managed cluster. Default open-cluster-management-agent.
	AgentNamespace string
	// NoDeployment writes only the namespace and bootstrap secret; the agent runs
	// elsewhere (`flotilla klusterlet`, as the local default does). Default false.
	NoDeployment bool
	// Image of the klusterlet Deployment. Default DefaultImage.
	Image string
	// Wait until the agent holds its hub credential (needs `flotilla accept` on the hub).
	Wait bool
	// Timeout bounds Wait. Default 5m.
	Timeout time.Duration
	// Progress receives one line per step. Default: discarded.
	Progress io.Writer
}

func (o *Options) defaults() error {
	var missing []string
	if o.SpokeConfig == nil {
		missing = append(missing, "managed cluster kubeconfig")
	}
	if o.HubAPIServer == "" {
		missing = append(missing, "--hub-apiserver")
	}
	if o.HubToken == "" {
		missing = append(missing, "--hub-token")
	}
	if o.ClusterName == "" {
		missing = append(missing, "--cluster-name")
	}
	if len(missing) > 0 {
		return fmt.Errorf("join: missing %v", missing)
	}
	if errs := validation.IsDNS1123Label(o.ClusterName); len(errs) > 0 {
		return fmt.Errorf("--cluster-name %q is not a valid cluster name: %v (it must be a DNS label: lower-case letters, digits and '-', at most 63 characters)", o.ClusterName, errs)
	}
	u, err := url.Parse(o.HubAPIServer)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("--hub-apiserver %q is not an https URL (like https://hub.example.com:6443)", o.HubAPIServer)
	}
	if o.CAHash != "" {
		if o.CAHash, err = pki.ParseCAHash(o.CAHash); err != nil {
			return err
		}
	}
	if o.AgentNamespace == "" {
		o.AgentNamespace = registration.DefaultAgentNamespace
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return nil
}

// Join checks everything it can, then writes the klusterlet into the managed cluster.
func Join(ctx context.Context, opts Options) error {
	if err := opts.defaults(); err != nil {
		return err
	}
	spoke, err := kubernetes.NewForConfig(opts.SpokeConfig)
	if err != nil {
		return err
	}
	kubeSystem, err := spoke.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("cannot read the managed cluster (kube-system namespace): %w", err)
	}
	ca, err := hubCA(ctx, opts)
	if err != nil {
		return err
	}
	if err := checkCAHash(ca, opts.CAHash); err != nil {
		return err
	}
	fmt.Fprintf(opts.Progress, "==> checking the bootstrap token against %s\n", opts.HubAPIServer)
	bootstrap, err := registration.BootstrapKubeconfig(opts.HubAPIServer, ca, opts.HubToken)
	if err != nil {
		return err
	}
	if err := checkHub(ctx, bootstrap, opts.ClusterName, string(kubeSystem.UID)); err != nil {
		return err
	}
	fmt.Fprintf(opts.Progress, "==> writing the klusterlet into the managed cluster (namespace %s)\n", opts.AgentNamespace)
	if err := write(ctx, opts, spoke, bootstrap); err != nil {
		return err
	}
	fmt.Fprintf(opts.Progress, "cluster %s asked to join; on the hub run: flotilla accept --clusters %s\n", opts.ClusterName, opts.ClusterName)
	if !opts.Wait {
		return nil
	}
	fmt.Fprintf(opts.Progress, "==> waiting for the hub to accept cluster %s\n", opts.ClusterName)
	wctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(wctx, time.Second, true, func(ctx context.Context) (bool, error) {
		sec, err := spoke.CoreV1().Secrets(opts.AgentNamespace).Get(ctx, registration.HubKubeconfigSecret, metav1.GetOptions{})
		return err == nil && len(sec.Data[registration.KeyCert]) > 0, nil
	}); err != nil {
		return fmt.Errorf("cluster %s was not accepted within %s (is the klusterlet running? did the hub admin run `flotilla accept`?)", opts.ClusterName, opts.Timeout)
	}
	fmt.Fprintf(opts.Progress, "cluster %s joined the hub\n", opts.ClusterName)
	return nil
}

// hubCA reads --ca-file, or fetches kube-public/cluster-info from the hub
// (anonymously, without the token) and checks that the CA it names verifies the
// hub's serving certificate.
func hubCA(ctx context.Context, opts Options) ([]byte, error) {
	if opts.CAFile != "" {
		ca, err := fileinput.ReadFile(opts.CAFile, fileinput.CredentialLimit, "CA bundles")
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", opts.CAFile)
		}
		return ca, nil
	}
	fmt.Fprintf(opts.Progress, "==> reading the hub CA from %s kube-public/cluster-info\n", opts.HubAPIServer)
	insecure := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the CA is checked below
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, opts.HubAPIServer+"/api/v1/namespaces/kube-public/configmaps/cluster-info", nil)
	if err != nil {
		return nil, err
	}
	resp, err := insecure.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the hub at %s: %w", opts.HubAPIServer, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the hub does not publish kube-public/cluster-info (HTTP %d): pass its CA with --ca-file", resp.StatusCode)
	}
	cm := &corev1.ConfigMap{}
	if err := json.Unmarshal(body, cm); err != nil {
		return nil, fmt.Errorf("kube-public/cluster-info: %w", err)
	}
	kc, err := clientcmd.Load([]byte(cm.Data["kubeconfig"]))
	if err != nil {
		return nil, fmt.Errorf("kube-public/cluster-info kubeconfig: %w", err)
	}
	var ca []byte
	for _, c := range kc.Clusters {
		ca = c.CertificateAuthorityData
	}
	if len(ca) == 0 {
		return nil, errors.New("kube-public/cluster-info names no CA: pass the hub CA with --ca-file")
	}
	if opts.CAHash == "" {
		fmt.Fprintln(opts.Progress, "    note: the CA came over an unverified connection; pass --ca-hash (printed by `flotilla init`) or --ca-file to pin it")
	}
	return ca, nil
}

// checkCAHash refuses a hub CA bundle none of whose certificates has the pinned hash.
func checkCAHash(ca []byte, want string) error {
	if want == "" {
		return nil
	}
	got := pki.CAHashes(ca)
	if slices.Contains(got, want) {
		return nil
	}
	return fmt.Errorf("the hub CA does not match --ca-hash %s (the hub showed %s): someone may be between you and the hub, or the hash belongs to another hub; nothing was written",
		want, strings.Join(got, ", "))
}

// checkHub verifies the hub's certificate and the token (who am I?), and that
// the cluster name is free or already ours.
func checkHub(ctx context.Context, bootstrap []byte, name, clusterID string) error {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(bootstrap)
	if err != nil {
		return err
	}
	cfg.Timeout = 15 * time.Second
	hub, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	review, err := hub.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return hubError(cfg.Host, err)
	}
	if review.Status.UserInfo.Username == "system:anonymous" {
		return errors.New("the hub did not recognise the bootstrap token (expired or wrong): mint a new one with `flotilla get token` on the hub")
	}
	clusters, err := clusterclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	existing, err := clusters.ClusterV1().ManagedClusters().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return hubError(cfg.Host, err)
	}
	if owner := existing.Annotations[registration.ClusterIDAnnotation]; owner != "" && owner != clusterID {
		return fmt.Errorf("cluster name %q is already registered on the hub by another managed cluster (id %s; this one is %s): choose another --cluster-name, or remove the old one with `flotilla unjoin --cleanup-hub` first", name, owner, clusterID)
	}
	return nil
}

func hubError(host string, err error) error {
	var unknown x509.UnknownAuthorityError
	switch {
	case apierrors.IsUnauthorized(err):
		return errors.New("the hub rejected the bootstrap token (expired or wrong): mint a new one with `flotilla get token` on the hub")
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the bootstrap token lacks the bootstrap permissions on the hub (was `flotilla init` run?): %w", err)
	case errors.As(err, &unknown) || strings.Contains(err.Error(), "x509: "):
		return fmt.Errorf("the hub's certificate at %s is not signed by the given CA (wrong --ca-file or hub address?): %w", host, err)
	}
	return fmt.Errorf("cannot reach the hub at %s: %w", host, err)
}

// write applies the namespace, the bootstrap secret and (unless NoDeployment) the klusterlet.
func write(ctx context.Context, opts Options, spoke kubernetes.Interface, bootstrap []byte) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opts.AgentNamespace}}
	if _, err := spoke.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", opts.AgentNamespace, err)
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: registration.BootstrapKubeconfigSecret, Namespace: opts.AgentNamespace},
		Data:       map[string][]byte{"kubeconfig": bootstrap},
	}
	secrets := spoke.CoreV1().Secrets(opts.AgentNamespace)
	if _, err := secrets.Create(ctx, sec, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update bootstrap secret: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("create bootstrap secret: %w", err)
	}
	if opts.NoDeployment {
		return nil
	}
	objs, err := manifests.Render(manifests.KlusterletManifests, map[string]string{
		"Namespace": opts.AgentNamespace, "ClusterName": opts.ClusterName, "Image": opts.Image,
	})
	if err != nil {
		return err
	}
	c, err := client.New(opts.SpokeConfig, client.Options{})
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("flotilla-join"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
			return fmt.Errorf("apply %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}
