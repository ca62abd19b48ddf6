// Package hub runs the Flotilla hub: one controller-runtime manager with the
// registration, placement and work controllers, and one TLS webhook server whose
// handlers it registers with the hub apiserver as the MutatingWebhookConfiguration
// and then the ValidatingWebhookConfiguration "flotilla-hub" (webhooks.go). It serves the live compliance report on that server too, and
// the aggregated API compliance.flotilla.dev (internal/aggregated) on a port of its
// own (api.go: where).
package hub
