// Package bootstrap prepares a hub for registration (`flotilla init`), mints
// bootstrap tokens (`flotilla get token`) and waits for a hub (`init --wait`):
// it installs the OCM hub CRDs, the shared registration ClusterRoles, and the
// bootstrap identity (ServiceAccount open-cluster-management/agent-registration-bootstrap
// bound to exactly the bootstrap permissions), then asks the TokenRequest API
// for a short-lived token.
package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"flotilla.dev/flotilla/hub/registration/cluster"
	"flotilla.dev/flotilla/hub/registration/rbac"
	"flotilla.dev/flotilla/hub/registration/webhook"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/pki"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/manifests"
)

// DefaultTokenTTL is the life of a bootstrap token (as clusteradm's).
const DefaultTokenTTL = time.Hour

// Options configures Init and Token. Every field documents its default.
type Options struct {
	// Config reaches the hub as an admin. Required.
	Config *rest.Config
	// TokenTTL is the bootstrap token's life. Default 1h (the apiserver may
	// raise values below 10 minutes).
	TokenTTL time.Duration
	// HubAPIServer is the hub address printed in the join command. Default Config.Host.
	HubAPIServer string
	// Progress receives one line per step. Default: discarded.
	Progress io.Writer
}

// Result is a bootstrap token and how to use it.
type Result struct {
	Token        string    `json:"token"`
	HubAPIServer string    `json:"hubAPIServer"`
	ExpiresAt    time.Time `json:"expiresAt"`
	// CAHash pins the hub CA (sha256 of its SubjectPublicKeyInfo); empty when the
	// admin's kubeconfig names no CA.
	CAHash string `json:"caHash,omitempty"`
	// JoinCommand is the command to run against a managed cluster, with
	// <cluster_name> to fill in.
	JoinCommand string `json:"joinCommand"`
}

func (o *Options) defaults() error {
	if o.Config == nil {
		return errors.New("bootstrap: Options.Config is required")
	}
	if o.TokenTTL <= 0 {
		o.TokenTTL = DefaultTokenTTL
	}
	if o.HubAPIServer == "" {
		o.HubAPIServer = o.Config.Host
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return nil
}

// Init installs what registration needs on the hub and returns a bootstrap
// token. It is idempotent.
func Init(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	fmt.Fprintln(opts.Progress, "==> installing the Open Cluster Management hub, governance and Flotilla (flotilla.dev) CRDs and their admission policies (flotilla-*)")
	if err := manifests.InstallCRDs(ctx, opts.Config, manifests.HubCRDs, manifests.PolicyCRDs, manifests.FlotillaCRDs); err != nil {
		return nil, err
	}
	c, err := client.New(opts.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	// Before any token exists: ManagedCluster writes fail closed until a hub
	// registers its webhooks, so no cluster can be created already accepted.
	if err := ensureWebhookGuard(ctx, c, opts.Progress); err != nil {
		return nil, err
	}
	fmt.Fprintln(opts.Progress, "==> installing registration RBAC and the bootstrap identity")
	if err := cluster.EnsureSharedRoles(ctx, c); err != nil {
		return nil, err
	}
	infoRole, infoBinding := rbac.ClusterInfoRole()
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ocm.BootstrapNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ocm.BootstrapServiceAccount, Namespace: ocm.BootstrapNamespace}},
		rbac.BootstrapClusterRole(),
		rbac.BootstrapClusterRoleBinding(),
		infoRole, infoBinding,
	}
	for _, obj := range objects {
		if err := apply(ctx, c, obj); err != nil {
			return nil, err
		}
	}
	return Token(ctx, opts)
}

// ensureWebhookGuard registers the hub's fail-closed placeholder webhook
// configurations, mutating and validating, unless they (a hub's, or earlier
// placeholders) are there. The hub then only updates them, by name.
func ensureWebhookGuard(ctx context.Context, c client.Client, progress io.Writer) error {
	switch err := c.Create(ctx, webhook.MutatingPlaceholder()); {
	case err == nil:
		fmt.Fprintf(progress, "==> registered MutatingWebhookConfiguration %s: new ManagedClusters are tainted unreachable once `flotilla hub` serves\n", webhook.MutatingConfigurationName)
	case apierrors.IsAlreadyExists(err):
	default:
		return fmt.Errorf("register the ManagedCluster mutating webhook placeholder: %w", err)
	}
	err := c.Create(ctx, webhook.Placeholder())
	switch {
	case err == nil:
		fmt.Fprintf(progress, "==> registered ValidatingWebhookConfiguration %s: ManagedCluster writes are refused until `flotilla hub` serves\n", webhook.ConfigurationName)
		return nil
	case apierrors.IsAlreadyExists(err):
		return nil
	default:
		return fmt.Errorf("register the ManagedCluster webhook placeholder: %w", err)
	}
}

// apply creates obj or overwrites its content (RBAC rules, subjects).
func apply(ctx context.Context, c client.Client, want client.Object) error {
	got := want.DeepCopyObject().(client.Object)
	_, err := controllerutil.CreateOrUpdate(ctx, c, got, func() error {
		copyInto(got, want)
		return nil
	})
	if err != nil {
		return fmt.Errorf("apply %T %s: %w", want, want.GetName(), err)
	}
	return nil
}

// Token mints a bootstrap token for the bootstrap ServiceAccount (Init must have run).
func Token(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	secs := int64(opts.TokenTTL / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(ocm.BootstrapNamespace).CreateToken(ctx, ocm.BootstrapServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("bootstrap ServiceAccount %s/%s not found on the hub: run `flotilla init` first", ocm.BootstrapNamespace, ocm.BootstrapServiceAccount)
	}
	if err != nil {
		return nil, fmt.Errorf("mint a bootstrap token: %w", err)
	}
	fmt.Fprintf(opts.Progress, "==> bootstrap token minted, valid until %s\n", tr.Status.ExpirationTimestamp.UTC().Format(time.RFC3339))
	r := &Result{Token: tr.Status.Token, HubAPIServer: opts.HubAPIServer, ExpiresAt: tr.Status.ExpirationTimestamp.UTC()}
	if hashes := pki.CAHashes(hubCA(opts.Config)); len(hashes) > 0 {
		// The CA the admin's own kubeconfig trusts for this hub.
		r.CAHash = hashes[0]
	}
	r.JoinCommand = JoinCommand(r, "<cluster_name>")
	return r, nil
}

// JoinCommand is the clusteradm-style join command for one cluster; with a CA
// hash it pins the hub CA (`join` refuses a hub showing another CA).
func JoinCommand(r *Result, clusterName string) string {
	cmd := fmt.Sprintf("flotilla join --hub-token %s --hub-apiserver %s --cluster-name %s", r.Token, r.HubAPIServer, clusterName)
	if r.CAHash != "" {
		cmd += " --ca-hash " + r.CAHash
	}
	return cmd
}

// hubCA is the CA bundle cfg trusts for the hub (nil when it names none).
func hubCA(cfg *rest.Config) []byte {
	if len(cfg.CAData) > 0 {
		return cfg.CAData
	}
	if cfg.CAFile != "" {
		if b, err := os.ReadFile(cfg.CAFile); err == nil {
			return b
		}
	}
	return nil
}
