package addonconversion

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// CRDs are the CRDs whose versions this package converts.
var CRDs = []string{
	"managedclusteraddons.addon.open-cluster-management.io",
	"clustermanagementaddons.addon.open-cluster-management.io",
}

// Conversion is the CRD conversion that sends the apiserver to this webhook at cc
// (a URL or a Service; cc.CABundle is the serving certificate's CA).
func Conversion(cc apiextensionsv1.WebhookClientConfig) *apiextensionsv1.CustomResourceConversion {
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             cc.DeepCopy(),
			ConversionReviewVersions: []string{"v1"},
		},
	}
}

// Configure points the addon CRDs' conversion at this webhook (Conversion(cc)).
// The CRDs must exist (`flotilla init` installs them) and serve both versions.
func Configure(ctx context.Context, cfg *rest.Config, cc apiextensionsv1.WebhookClientConfig) error {
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	for _, name := range CRDs {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd, err := api.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if err := servesBoth(crd); err != nil {
				return err
			}
			crd.Spec.Conversion = Conversion(cc)
			_, err = api.Update(ctx, crd, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("CRD %s: set conversion webhook: %w", name, err)
		}
	}
	return nil
}

// servesBoth says whether crd serves v1alpha1 (stored) and v1beta1: a CRD installed
// by an older `flotilla init` serves v1alpha1 only and needs `flotilla init` again.
func servesBoth(crd *apiextensionsv1.CustomResourceDefinition) error {
	served := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		served[v.Name] = v.Served
	}
	if !served["v1alpha1"] || !served["v1beta1"] {
		return fmt.Errorf("does not serve both v1alpha1 and v1beta1 (run `flotilla init` again to update the CRDs)")
	}
	return nil
}
