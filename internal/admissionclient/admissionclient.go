// Package admissionclient makes the client the hub's admission webhooks talk
// to the apiserver with: uncached, with a rate limit of its own.
package admissionclient

import (
	"fmt"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The admission client's own limit: five times the hub's default controller
// budget.
const (
	QPS   = 500
	Burst = 1000
)

// New is an uncached client for mgr's apiserver with its own rate limit (QPS,
// Burst). An admission read or SubjectAccessReview never waits behind the
// controllers' shared budget, where a webhook that waits for tokens makes the
// apiserver time the write out (10 s). It stays bounded: the webhook port
// takes requests from anyone who reaches it, and an AdmissionReview sent
// there must not make the hub call the apiserver without limit. Make one per
// manager and share it between the webhooks.
func New(mgr ctrl.Manager) (client.Client, error) {
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.RateLimiter = nil
	cfg.QPS, cfg.Burst = QPS, Burst
	c, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("admission client: %w", err)
	}
	return c, nil
}
