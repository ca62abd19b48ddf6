package addonagent

import (
	"bytes"
	"context"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// RunOptions configure Run. Every field is required.
type RunOptions struct {
	// Spoke reaches the managed cluster.
	Spoke kubernetes.Interface
	// Addon names the Lease and the credential Secret.
	Addon string
	// Namespace is the install namespace (Lease, credential Secret).
	Namespace string
	// LeaseDuration written on the Lease, renewed every fifth of it.
	LeaseDuration time.Duration
	// CredentialInterval is how often the credential Secret is read again.
	CredentialInterval time.Duration
	// Log receives progress and errors.
	Log logr.Logger
}

// Run renews the addon's Lease and runs body with the agent's hub
// credential until ctx ends: it waits until the credential Secret holds a
// certificate, restarts body when the certificate changes (a rotation), and
// starts body again, at the next read of the Secret, when it ends on its own.
func Run(ctx context.Context, o RunOptions, body func(ctx context.Context, hub *rest.Config) error) error {
	spoke, addon := o.Spoke, o.Addon
	go func() {
		t := time.NewTicker(o.LeaseDuration / 5)
		defer t.Stop()
		for {
			// The install namespace comes with the addon's manifests.
			if err := RenewLease(ctx, spoke, o.Namespace, addon, o.LeaseDuration); apierrors.IsNotFound(err) {
				o.Log.V(1).Info("not renewing the lease yet", "reason", err.Error())
			} else if err != nil && ctx.Err() == nil {
				o.Log.Error(err, "renew lease")
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	t := time.NewTicker(o.CredentialInterval)
	defer t.Stop()
	var (
		cur    []byte
		cancel context.CancelFunc = func() {}
		done   chan error
	)
	defer func() { cancel() }()
	for {
		cred, err := ReadHubCredential(ctx, spoke, o.Namespace, addon)
		switch {
		case err != nil && cur == nil:
			o.Log.V(1).Info("waiting for the hub credential", "reason", err.Error())
		case err == nil && !bytes.Equal(cred.Config.CertData, cur):
			cancel()
			if done != nil {
				<-done
			}
			if cur != nil {
				o.Log.Info("hub credential rotated; restarting")
			}
			cur = cred.Config.CertData
			bctx, stop := context.WithCancel(ctx)
			cancel = stop
			done = make(chan error, 1)
			go func(cfg *rest.Config) { done <- body(bctx, cfg) }(cred.Config)
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			// body ended on its own: start again at the next round.
			if err != nil {
				o.Log.Error(err, "agent stopped; restarting")
			}
			cur, done = nil, nil
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		case <-t.C:
		}
	}
}
