// Package hub runs the Flotilla hub: one controller-runtime manager with the
// registration, placement and work controllers, and one TLS webhook server whose
// handlers it registers with the hub apiserver as the ValidatingWebhookConfiguration
// "flotilla-hub".
package hub
