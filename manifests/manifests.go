// Package manifests embeds the YAML Flotilla installs: the OCM CRDs copied from
// open-cluster-management.io/api (see hack/manifests.sh), Flotilla's own CRDs, the
// ValidatingAdmissionPolicies that bound the OCM CRDs' fields (admission/, see
// docs/admission.md), and the RBAC and deployment templates used by `flotilla init` and `flotilla join`.
package manifests

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

//go:embed crds
var crdFS embed.FS

// CRD sets, one folder each under manifests/crds.
const (
	// HubCRDs are served by the hub: clusters, cluster sets, placement, work, addons.
	HubCRDs = "hub"
	// KlusterletCRDs are served by each managed cluster: ClusterClaim, AppliedManifestWork.
	KlusterletCRDs = "klusterlet"
	// PolicyCRDs are Flotilla's governance CRDs (policy.open-cluster-management.io).
	PolicyCRDs = "policy"
	// FlotillaCRDs are Flotilla's own CRDs (flotilla.dev): DistributionPolicy.
	FlotillaCRDs = "flotilla"
)

// CRDs decodes every CRD of the named sets, in file-name order. A set whose
// folder does not exist is an error.
func CRDs(sets ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, set := range sets {
		dir := path.Join("crds", set)
		entries, err := fs.ReadDir(crdFS, dir)
		if err != nil {
			return nil, fmt.Errorf("CRD set %q: %w", set, err)
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, name := range names {
			data, err := crdFS.ReadFile(path.Join(dir, name))
			if err != nil {
				return nil, err
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(data, crd); err != nil {
				return nil, fmt.Errorf("decode %s/%s: %w", dir, name, err)
			}
			if crd.Kind != "CustomResourceDefinition" {
				return nil, fmt.Errorf("%s/%s: kind %q is not CustomResourceDefinition", dir, name, crd.Kind)
			}
			out = append(out, crd)
		}
	}
	return out, nil
}

// InstallCRDs creates or updates the CRDs of the named sets on the cluster behind
// cfg, waits until every one of them is Established, then installs the sets'
// admission policies (InstallAdmission) and waits until they are in force: the
// CRDs are never served without the bounds that keep their objects decodable.
func InstallCRDs(ctx context.Context, cfg *rest.Config, sets ...string) error {
	crds, err := CRDs(sets...)
	if err != nil {
		return err
	}
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		existing, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, crd, metav1.CreateOptions{})
		case err == nil:
			crd.ResourceVersion = existing.ResourceVersion
			// Keep the conversion webhook a running hub set (the addon CRDs, see
			// hub/addonconversion): the copied CRDs carry none.
			if keepConversion(existing, crd) {
				crd.Spec.Conversion = existing.Spec.Conversion
			}
			_, err = api.Update(ctx, crd, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("install CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		name := crd.Name
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := api.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s did not become Established: %w", name, err)
		}
	}
	return InstallAdmission(ctx, cfg, sets...)
}

// keepConversion says whether an update to want keeps existing's conversion: want
// sets no webhook of its own, existing has one, and want still serves more than
// one version (a webhook has nothing to convert otherwise).
func keepConversion(existing, want *apiextensionsv1.CustomResourceDefinition) bool {
	if want.Spec.Conversion != nil && want.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter {
		return false
	}
	if existing.Spec.Conversion == nil || existing.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		return false
	}
	served := 0
	for _, v := range want.Spec.Versions {
		if v.Served {
			served++
		}
	}
	return served > 1
}
