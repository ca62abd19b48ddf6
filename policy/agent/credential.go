package agent

import (
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"flotilla.dev/flotilla/internal/addonagent"
)

// runWithCredential runs body with the agent's hub credential and renews
// its Lease (addonagent.Run).
func runWithCredential(ctx context.Context, addon string, o Options, body func(ctx context.Context, hub *rest.Config) error) error {
	spoke, err := kubernetes.NewForConfig(o.SpokeConfig)
	if err != nil {
		return err
	}
	return addonagent.Run(ctx, addonagent.RunOptions{Spoke: spoke, Addon: addon, Namespace: o.Namespace,
		LeaseDuration: o.LeaseDuration, CredentialInterval: o.CredentialInterval, Log: o.Log}, body)
}
