package work

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Options configures the hub side of work distribution. Every field documents its default.
type Options struct {
	// ManifestLimit is the largest total size of a ManifestWork's manifests in
	// bytes. Default 500 KiB.
	ManifestLimit int
}

// Setup registers the hub's work controllers (ManifestWorkReplicaSet, ...) with mgr
// and the ManifestWork admission handler on mgr.GetWebhookServer().
//
// CONTRACT (the hub wiring in hub/ calls this): keep this signature.
func Setup(mgr ctrl.Manager, opts Options) error { return nil }

// Webhooks returns the validating webhooks this package serves. ClientConfig.URL
// holds only the path (for example "/validate-manifestwork"); the hub prefixes its
// own base URL and sets CABundle when it registers them.
func Webhooks() []admissionregistrationv1.ValidatingWebhook { return nil }
