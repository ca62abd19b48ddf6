package agent

import (
	"errors"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"flotilla.dev/flotilla/internal/ocm"
)

// Options configure both agents. Every field documents its default.
type Options struct {
	// SpokeConfig reaches the managed cluster. Required.
	SpokeConfig *rest.Config
	// ClusterName is the managed cluster's name on the hub (and the namespace
	// its replicas and templates live in on both sides). Required.
	ClusterName string
	// Namespace is the install namespace (Lease, hub credential Secret).
	// Default open-cluster-management-agent-addon.
	Namespace string
	// LeaseDuration written on the Lease, renewed every fifth of it. Default 60s.
	LeaseDuration time.Duration
	// CredentialInterval is how often the hub credential Secret is read again
	// (waiting for it, and restarting on a rotated certificate). Default 5s.
	CredentialInterval time.Duration
	// Log receives progress and errors. Default: logr.Discard().
	Log logr.Logger
}

func (o *Options) defaults(addon string) error {
	if o.SpokeConfig == nil || o.ClusterName == "" {
		return errors.New(addon + " agent: SpokeConfig and ClusterName are required")
	}
	if o.Namespace == "" {
		o.Namespace = ocm.DefaultAddonInstallNamespace
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 60 * time.Second
	}
	if o.CredentialInterval <= 0 {
		o.CredentialInterval = 5 * time.Second
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	o.Log = o.Log.WithValues("addon", addon, "cluster", o.ClusterName)
	return nil
}
