package placement

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"flotilla.dev/flotilla/hub/clusterset"
	"flotilla.dev/flotilla/hub/clusterset/bindings"
	"flotilla.dev/flotilla/hub/placement/admission"
	"flotilla.dev/flotilla/hub/placement/controller"
	"flotilla.dev/flotilla/hub/workreplicaset"
)

// Options configures the placement controllers. Every field documents its default.
type Options struct {
	// Workers is how many Placements are scheduled concurrently. Default 8.
	Workers int
	// DisableManifestWorkReplicaSet turns the ManifestWorkReplicaSet controller off.
	// Default false: it runs (upstream OCM hides it behind a feature gate).
	DisableManifestWorkReplicaSet bool
}

// Setup registers the placement, cluster-set and binding controllers with mgr, and
// any admission handlers on mgr.GetWebhookServer() at the paths Webhooks names.
// It also runs the ManifestWorkReplicaSet controller unless disabled.
//
// CONTRACT (the hub wiring in hub/ calls this): keep this signature.
func Setup(mgr ctrl.Manager, opts Options) error {
	s := mgr.GetScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clusterv1.Install, clusterv1alpha1.Install, clusterv1beta1.Install, clusterv1beta2.Install, workv1.Install, workv1alpha1.Install,
	} {
		utilruntime.Must(add(s))
	}
	if err := clusterset.Setup(mgr); err != nil {
		return fmt.Errorf("cluster sets: %w", err)
	}
	mgr.GetWebhookServer().Register(admission.WebhookPath, &webhook.Admission{Handler: &admission.Validator{}})
	// Served whether or not the replica set controller runs: the webhook is registered either way.
	mgr.GetWebhookServer().Register(workreplicaset.PolicyWebhookPath, &webhook.Admission{Handler: workreplicaset.PolicyValidator{}})
	if err := controller.Setup(mgr, controller.Options{Workers: opts.Workers}); err != nil {
		return fmt.Errorf("placement controller: %w", err)
	}
	if !opts.DisableManifestWorkReplicaSet {
		if err := workreplicaset.Setup(mgr, workreplicaset.Options{}); err != nil {
			return fmt.Errorf("manifestworkreplicaset controller: %w", err)
		}
	}
	return nil
}

// Webhooks returns the validating webhooks this package serves. ClientConfig.URL
// holds only the path (for example "/validate-managedclustersetbinding"); the hub
// prefixes its own base URL and sets CABundle when it registers them.
func Webhooks() []admissionregistrationv1.ValidatingWebhook {
	return []admissionregistrationv1.ValidatingWebhook{bindings.Webhook(), admission.Webhook(), workreplicaset.PolicyWebhook()}
}
