package placement

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Options configures the placement controllers. Every field documents its default.
type Options struct{}

// Setup registers the placement, cluster-set and binding controllers with mgr, and
// any admission handlers on mgr.GetWebhookServer() at the paths Webhooks names.
//
// CONTRACT (the hub wiring in hub/ calls this): keep this signature.
func Setup(mgr ctrl.Manager, opts Options) error { return nil }

// Webhooks returns the validating webhooks this package serves. ClientConfig.URL
// holds only the path (for example "/validate-managedclustersetbinding"); the hub
// prefixes its own base URL and sets CABundle when it registers them.
func Webhooks() []admissionregistrationv1.ValidatingWebhook { return nil }
