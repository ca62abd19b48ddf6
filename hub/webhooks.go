package hub

import (
	"context"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"flotilla.dev/flotilla/hub/addonconversion"
)

// webhookSet is what the hub registers with its apiserver: the validating
// webhooks (ValidatingWebhookConfiguration flotilla-hub) and the mutating
// ones (MutatingWebhookConfiguration flotilla-hub), pointed at this hub.
type webhookSet struct {
	validating []admissionregistrationv1.ValidatingWebhook
	mutating   []admissionregistrationv1.MutatingWebhook
}

// endpoint says where the apiserver reaches the webhook served at path.
type endpoint func(path string) admissionregistrationv1.WebhookClientConfig

// atBaseURL reaches path at base (https://host:port) with caBundle.
func atBaseURL(base string, caBundle []byte) endpoint {
	return func(path string) admissionregistrationv1.WebhookClientConfig {
		url := base + "/" + strings.TrimPrefix(path, "/")
		return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
	}
}

// atService reaches path on the Service namespace/name (port 443) with caBundle.
func atService(namespace, name string, caBundle []byte) endpoint {
	return func(path string) admissionregistrationv1.WebhookClientConfig {
		path = "/" + strings.TrimPrefix(path, "/")
		return admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: namespace, Name: name, Path: &path, Port: ptr.To[int32](443)},
			CABundle: caBundle,
		}
	}
}

// pathOf is the path a webhook's ClientConfig.URL holds before it is pointed.
func pathOf(cc admissionregistrationv1.WebhookClientConfig) string {
	if cc.URL != nil {
		return *cc.URL
	}
	return "/"
}

// pointed returns the set with every webhook pointed by at (the input is not changed).
func (s webhookSet) pointed(at endpoint) webhookSet {
	var out webhookSet
	for _, h := range s.validating {
		h = *h.DeepCopy()
		h.ClientConfig = at(pathOf(h.ClientConfig))
		out.validating = append(out.validating, h)
	}
	for _, h := range s.mutating {
		h = *h.DeepCopy()
		h.ClientConfig = at(pathOf(h.ClientConfig))
		out.mutating = append(out.mutating, h)
	}
	return out
}

// withBaseURL prefixes each webhook's path with base and sets its CA bundle.
func withBaseURL(hooks []admissionregistrationv1.ValidatingWebhook, base string, caBundle []byte) []admissionregistrationv1.ValidatingWebhook {
	return webhookSet{validating: hooks}.pointed(atBaseURL(base, caBundle)).validating
}

// withService points each webhook at its path on the Service namespace/name
// (port 443) and sets its CA bundle.
func withService(hooks []admissionregistrationv1.ValidatingWebhook, namespace, name string, caBundle []byte) []admissionregistrationv1.ValidatingWebhook {
	return webhookSet{validating: hooks}.pointed(atService(namespace, name, caBundle)).validating
}

// conversionClientConfig is where the apiserver reaches the addon conversion
// webhook: the Service namespace/name (port 443) when service is set, else base.
func conversionClientConfig(base, service string, caBundle []byte) apiextensionsv1.WebhookClientConfig {
	if ns, name, ok := strings.Cut(service, "/"); ok {
		return apiextensionsv1.WebhookClientConfig{
			Service:  &apiextensionsv1.ServiceReference{Namespace: ns, Name: name, Path: ptr.To(addonconversion.Path), Port: ptr.To[int32](443)},
			CABundle: caBundle,
		}
	}
	return apiextensionsv1.WebhookClientConfig{URL: ptr.To(base + addonconversion.Path), CABundle: caBundle}
}

// registerWebhooks waits for the webhook server to serve, then writes the
// MutatingWebhookConfiguration and then the ValidatingWebhookConfiguration
// (in that order: once the validating one admits ManagedCluster creates, the
// mutating one already taints them) and, when ctx ends and remove is set,
// removes them if still ours.
// served runs first, once the server serves (the addon CRDs' conversion).
func registerWebhooks(ctx context.Context, mgr manager.Manager, hooks webhookSet, base string, served func(context.Context) error, ready func(), remove func() bool) error {
	log := ctrl.Log.WithName("hub")
	started := mgr.GetWebhookServer().StartedChecker()
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return started(nil) == nil, nil
	}); err != nil {
		return nil
	}
	if err := served(ctx); err != nil {
		return err
	}
	c := mgr.GetClient()
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: WebhookConfigurationName}}
	if err := applyMutating(ctx, c, mgr.GetAPIReader(), mwc, hooks.mutating); err != nil {
		return fmt.Errorf("register mutating webhooks: %w", err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: WebhookConfigurationName}}
	if err := applyValidating(ctx, c, mgr.GetAPIReader(), vwc, hooks.validating); err != nil {
		return fmt.Errorf("register webhooks: %w", err)
	}
	log.Info("webhooks registered", "url", base, "count", len(hooks.validating), "mutating", len(hooks.mutating))
	if ready != nil {
		ready()
	}
	<-ctx.Done()
	if !remove() {
		return nil
	}
	// Stop refusing writes for a hub that is gone, unless another hub took over.
	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	apiReader := mgr.GetAPIReader()
	if err := apiReader.Get(stopCtx, client.ObjectKeyFromObject(vwc), vwc); err == nil && ours(vwc, base) {
		_ = c.Delete(stopCtx, vwc, client.Preconditions{ResourceVersion: &vwc.ResourceVersion})
	}
	if err := apiReader.Get(stopCtx, client.ObjectKeyFromObject(mwc), mwc); err == nil && oursMutating(mwc, base) {
		_ = c.Delete(stopCtx, mwc, client.Preconditions{ResourceVersion: &mwc.ResourceVersion})
	}
	return nil
}

// applyMutating creates mwc with hooks or updates it to them. It reads
// through reader (the apiserver, by name): the hub needs no list or watch on
// every mutating webhook configuration, only get and update on its own
// (`flotilla init` creates it) and create for a hub that was set up before.
func applyMutating(ctx context.Context, c client.Client, reader client.Reader, mwc *admissionregistrationv1.MutatingWebhookConfiguration, hooks []admissionregistrationv1.MutatingWebhook) error {
	err := reader.Get(ctx, client.ObjectKeyFromObject(mwc), mwc)
	switch {
	case apierrors.IsNotFound(err):
		mwc.Webhooks = hooks
		return c.Create(ctx, mwc)
	case err != nil:
		return err
	}
	mwc.Webhooks = hooks
	return c.Update(ctx, mwc)
}

// applyValidating is applyMutating for the ValidatingWebhookConfiguration:
// read by name through reader, so the hub holds get, update and delete on
// its own configuration and create, and no list or watch on any.
func applyValidating(ctx context.Context, c client.Client, reader client.Reader, vwc *admissionregistrationv1.ValidatingWebhookConfiguration, hooks []admissionregistrationv1.ValidatingWebhook) error {
	err := reader.Get(ctx, client.ObjectKeyFromObject(vwc), vwc)
	switch {
	case apierrors.IsNotFound(err):
		vwc.Webhooks = hooks
		return c.Create(ctx, vwc)
	case err != nil:
		return err
	}
	vwc.Webhooks = hooks
	return c.Update(ctx, vwc)
}

func ours(vwc *admissionregistrationv1.ValidatingWebhookConfiguration, base string) bool {
	var configs []admissionregistrationv1.WebhookClientConfig
	for _, h := range vwc.Webhooks {
		configs = append(configs, h.ClientConfig)
	}
	return pointsAt(configs, base)
}

func oursMutating(mwc *admissionregistrationv1.MutatingWebhookConfiguration, base string) bool {
	var configs []admissionregistrationv1.WebhookClientConfig
	for _, h := range mwc.Webhooks {
		configs = append(configs, h.ClientConfig)
	}
	return pointsAt(configs, base)
}

// pointsAt reports whether every config points at base: "service:ns/name"
// or a URL prefix.
func pointsAt(configs []admissionregistrationv1.WebhookClientConfig, base string) bool {
	if svc, ok := strings.CutPrefix(base, "service:"); ok {
		for _, cc := range configs {
			if s := cc.Service; s == nil || s.Namespace+"/"+s.Name != svc {
				return false
			}
		}
		return true
	}
	for _, cc := range configs {
		if cc.URL == nil || !strings.HasPrefix(*cc.URL, base+"/") {
			return false
		}
	}
	return true
}
