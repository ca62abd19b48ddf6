package registration

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
)

// Defaults and names shared with `flotilla join` and the manifests.
const (
	DefaultAgentNamespace = "open-cluster-management-agent"
	// HubKubeconfigSecret holds the cluster's own hub credential.
	HubKubeconfigSecret = "hub-kubeconfig-secret"
	// BootstrapKubeconfigSecret holds the bootstrap kubeconfig written by `join`.
	BootstrapKubeconfigSecret = "bootstrap-hub-kubeconfig"
	// ClusterIDAnnotation on the ManagedCluster records which managed cluster (its
	// kube-system namespace UID) registered the name, so a second cluster using
	// the same name is refused instead of taking the first one over.
	ClusterIDAnnotation = "agent.flotilla.dev/cluster-id"
	// DefaultLeaseDurationSeconds is the heartbeat period set on a new ManagedCluster.
	DefaultLeaseDurationSeconds = 60
	// DefaultRotationFraction: a certificate is renewed when this fraction of its life is left.
	DefaultRotationFraction = 0.2
)

// Secret keys of hub-kubeconfig-secret (OCM's) plus the pending key.
const (
	KeyKubeconfig  = "kubeconfig"
	KeyCert        = "tls.crt"
	KeyKey         = "tls.key"
	KeyClusterName = "cluster-name"
	KeyAgentName   = "agent-name"
	// keyPending holds the private key of a CSR not yet signed.
	keyPending = "pending.key"
)

// Options configures the registration agent. Every field documents its default.
type Options struct {
	// ClusterName is the managed cluster's name on the hub (a DNS label). Required.
	ClusterName string
	// AgentName distinguishes this agent in its certificate's CN. Default: the one
	// stored in hub-kubeconfig-secret, else a new random name.
	AgentName string
	// AgentNamespace on the managed cluster holds the secrets. Default
	// open-cluster-management-agent.
	AgentNamespace string
	// BootstrapKubeconfig is the bootstrap hub kubeconfig (token + hub CA).
	// Default: the "kubeconfig" key of secret bootstrap-hub-kubeconfig in AgentNamespace.
	BootstrapKubeconfig []byte
	// SpokeConfig reaches the managed cluster. Required.
	SpokeConfig *rest.Config
	// HubKubeconfigDir receives kubeconfig, tls.crt and tls.key so that clients
	// built from HubConfig reload rotated certificates. Default: a new temporary folder.
	HubKubeconfigDir string
	// ExternalServerURLs are published in spec.managedClusterClientConfigs.
	// Default: SpokeConfig.Host.
	ExternalServerURLs []string
	// LeaseDurationSeconds is set on a ManagedCluster this agent creates, at
	// most MaxLeaseDurationSeconds (the hub's admission policy refuses more). Default 60.
	LeaseDurationSeconds int32
	// ClientCertExpirationSeconds is asked of the signer (kube-controller-manager
	// allows at least 600). Default 0: the signer's default (a year).
	ClientCertExpirationSeconds int32
	// AddonCertExpirationSeconds is asked of the signer for addon agents'
	// certificates (at least 600 for kube-controller-manager). Default:
	// ClientCertExpirationSeconds. Addon credentials rotate with RotationFraction.
	AddonCertExpirationSeconds int32
	// RotationFraction: renew when this fraction of the certificate's life is left. Default 0.2.
	RotationFraction float64
	// StatusSyncInterval is how often availability, version, resources and claims
	// are reported. Default 10s.
	StatusSyncInterval time.Duration
	// RetryInterval is the pause after a failed bootstrap attempt. Default 5s.
	RetryInterval time.Duration
	// AddonSyncInterval is how often addon credentials and addon leases are
	// checked (see addons.go). Default 5s.
	AddonSyncInterval time.Duration
}

func (o *Options) defaults() error {
	if errs := validation.IsDNS1123Label(o.ClusterName); len(errs) > 0 {
		return fmt.Errorf("cluster name %q is not a DNS label: %v", o.ClusterName, errs)
	}
	if o.SpokeConfig == nil {
		return errors.New("registration: Options.SpokeConfig is required")
	}
	if o.AgentNamespace == "" {
		o.AgentNamespace = DefaultAgentNamespace
	}
	if len(o.ExternalServerURLs) == 0 {
		o.ExternalServerURLs = []string{o.SpokeConfig.Host}
	}
	for _, u := range o.ExternalServerURLs {
		if err := checkClusterURL(u); err != nil {
			return err
		}
	}
	if o.LeaseDurationSeconds <= 0 {
		o.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if o.LeaseDurationSeconds > MaxLeaseDurationSeconds {
		return fmt.Errorf("lease duration %ds is more than %ds (the most the hub admits in spec.leaseDurationSeconds)", o.LeaseDurationSeconds, MaxLeaseDurationSeconds)
	}
	if o.AddonCertExpirationSeconds <= 0 {
		o.AddonCertExpirationSeconds = o.ClientCertExpirationSeconds
	}
	if o.RotationFraction <= 0 || o.RotationFraction >= 1 {
		o.RotationFraction = DefaultRotationFraction
	}
	if o.StatusSyncInterval <= 0 {
		o.StatusSyncInterval = 10 * time.Second
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = 5 * time.Second
	}
	if o.AddonSyncInterval <= 0 {
		o.AddonSyncInterval = 5 * time.Second
	}
	return nil
}

// MaxLeaseDurationSeconds is the largest spec.leaseDurationSeconds the hub's
// admission policy (manifests/admission/hub/managedclusters.yaml) admits.
const MaxLeaseDurationSeconds = 86400

// checkClusterURL applies the hub's admission rule for
// spec.managedClusterClientConfigs[].url (an absolute http or https URL with a
// host) before the agent publishes u, so a bad --cluster-url fails at start.
func checkClusterURL(u string) error {
	parsed, err := url.Parse(u)
	if err != nil || (parsed.Scheme != "https" && parsed.Scheme != "http") || parsed.Host == "" {
		return fmt.Errorf("cluster URL %q (published in spec.managedClusterClientConfigs[].url) must be an absolute https:// or http:// URL with a host, for example https://api.cluster1.example.com:6443", u)
	}
	return nil
}
