package agent

import (
	"bytes"
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"flotilla.dev/flotilla/internal/addonagent"
)

// runWithCredential renews the addon's Lease and runs body with the agent's
// hub credential: it waits until the credential Secret holds a certificate,
// and restarts body when the certificate changes (a rotation).
func runWithCredential(ctx context.Context, addon string, o Options, body func(ctx context.Context, hub *rest.Config) error) error {
	spoke, err := kubernetes.NewForConfig(o.SpokeConfig)
	if err != nil {
		return err
	}
	go func() {
		t := time.NewTicker(o.LeaseDuration / 5)
		defer t.Stop()
		for {
			// The install namespace comes with the addon's manifests.
			if err := addonagent.RenewLease(ctx, spoke, o.Namespace, addon, o.LeaseDuration); apierrors.IsNotFound(err) {
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
		cred, err := addonagent.ReadHubCredential(ctx, spoke, o.Namespace, addon)
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
