package addons

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"flotilla.dev/flotilla/addons/approve"
	"flotilla.dev/flotilla/addons/deploy"
	"flotilla.dev/flotilla/addons/example"
	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/addons/governance"
	"flotilla.dev/flotilla/addons/install"
	"flotilla.dev/flotilla/addons/search"
)

// Options configures the addon manager. Every field documents its default.
type Options struct {
	// Registry holds the addons the hub manages. Default: ShippedWith(AgentImage).
	Registry *framework.Registry
	// AgentImage is the image of the shipped addons' agents (the flotilla
	// image; an AddOnDeploymentConfig's registries still apply to it). Used
	// only when Registry is nil. Default example.DefaultImage.
	AgentImage string
	// ManifestLimit is the most manifest bytes one ManifestWork holds. Default 500 KiB.
	ManifestLimit int
}

// Shipped is the registry of the addons Flotilla ships: example, the two
// governance addons (governance-policy-framework, config-policy-controller)
// and fleet search, their agents from the default image.
func Shipped() *framework.Registry { return ShippedWith("") }

// ShippedWith is Shipped with the agents' Deployments running agentImage
// ("" = the default image).
func ShippedWith(agentImage string) *framework.Registry {
	r, err := framework.NewRegistry(example.Addon{Image: agentImage},
		governance.Framework{Image: agentImage}, governance.ConfigPolicy{Image: agentImage}, search.Addon{Image: agentImage})
	if err != nil {
		panic(err) // a shipped addon is invalid: a programming error caught by every test
	}
	return r
}

// Setup registers the addon controllers with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.Registry == nil {
		opts.Registry = ShippedWith(opts.AgentImage)
	}
	if err := install.Setup(mgr); err != nil {
		return err
	}
	if err := deploy.Setup(mgr, deploy.Options{Registry: opts.Registry, ManifestLimit: opts.ManifestLimit}); err != nil {
		return err
	}
	if err := approve.Setup(mgr); err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		// Leader-only (the default for runnables): one hub creates them.
		return EnsureClusterManagementAddOns(ctx, mgr.GetClient(), opts.Registry)
	}))
}

// ClusterManagementAddOn is the ClusterManagementAddOn the hub creates for a.
func ClusterManagementAddOn(a framework.Addon) *addonv1alpha1.ClusterManagementAddOn {
	o := a.Options()
	cma := &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: a.Name(), Annotations: map[string]string{
			addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			AddOnMeta:       addonv1alpha1.AddOnMeta{DisplayName: o.DisplayName, Description: o.Description},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{
				Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}}},
		},
	}
	if cma.Spec.AddOnMeta.DisplayName == "" {
		cma.Spec.AddOnMeta.DisplayName = a.Name()
	}
	if o.InstallStrategy != nil {
		cma.Spec.InstallStrategy = *o.InstallStrategy
	}
	return cma
}

// EnsureClusterManagementAddOns creates the ClusterManagementAddOn of each
// registered addon that has none; existing ones keep what an admin set.
func EnsureClusterManagementAddOns(ctx context.Context, c client.Client, reg *framework.Registry) error {
	log := ctrl.Log.WithName("addons")
	for _, name := range reg.Names() {
		a, _ := reg.Get(name)
		err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			err := c.Create(ctx, ClusterManagementAddOn(a))
			if err != nil && !apierrors.IsAlreadyExists(err) {
				log.Error(err, "create ClusterManagementAddOn; retrying", "addon", name)
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return nil // stopping
		}
	}
	return nil
}
