package agent

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/watchguard"
	"flotilla.dev/flotilla/policy/certpolicy"
	"flotilla.dev/flotilla/policy/configpolicy"
	"flotilla.dev/flotilla/policy/gatekeeper/live"
	"flotilla.dev/flotilla/policy/operatorpolicy"
)

// RunConfigPolicy runs the config-policy-controller agent until ctx ends:
// the ConfigurationPolicy engine (the same runner as `flotilla policy run`,
// watch-driven) on the ConfigurationPolicies of the cluster namespace, the
// OperatorPolicy engine (policy/operatorpolicy) on its OperatorPolicies (as
// upstream's config-policy-controller), and the CertificatePolicy engine
// (policy/certpolicy) on its CertificatePolicies (upstream runs that one as
// a third addon, cert-policy-controller; here it shares this agent and its
// rights), once
// the addon's hub credential exists (the addon is enabled and registered),
// and the addon's Lease. Where Gatekeeper is not installed, it also runs
// Flotilla's Rego engine (package gatekeeper/live) on the ConstraintTemplates
// and constraints policies deliver, installing the ConstraintTemplate CRD;
// where Gatekeeper is installed (its ConstraintTemplate CRD exists when the
// agent starts), Gatekeeper audits.
func RunConfigPolicy(ctx context.Context, o Options) error {
	if err := o.defaults(ocm.ConfigPolicyAddon); err != nil {
		return err
	}
	// The engines' caches follow the cluster: a watch that died starts them
	// again, listed afresh (the guard reads their own watches).
	guard, spoke := watchguard.NewTracker("cluster", o.SpokeConfig, 0)
	tracked := o
	tracked.SpokeConfig = spoke
	return runWithCredential(ctx, ocm.ConfigPolicyAddon, o, func(ctx context.Context, _ *rest.Config) error {
		return watchguard.Run(ctx, o.Log, []watchguard.Sign{guard}, func(ctx context.Context) error { return runEngines(ctx, tracked) })
	})
}

// runEngines runs the ConfigurationPolicy engine and, without Gatekeeper,
// the Rego engine, until ctx ends.
func runEngines(ctx context.Context, o Options) error {
	installed, err := gatekeeperInstalled(ctx, o.SpokeConfig)
	if err != nil {
		return err
	}
	if installed {
		o.Log.Info("Gatekeeper is installed: it audits the constraints policies deliver")
	} else {
		o.Log.Info("no Gatekeeper: running Flotilla's Rego engine on the constraints policies deliver")
		if _, err := live.Start(ctx, live.Options{Config: o.SpokeConfig, InstallTemplateCRD: true,
			Log: o.Log.WithName("gatekeeper"), EventSource: ocm.ConfigPolicyAddon}); err != nil {
			return fmt.Errorf("start the Rego engine: %w", err)
		}
	}
	o.Log.Info("running the ConfigurationPolicy, CertificatePolicy and OperatorPolicy engines", "namespace", o.ClusterName)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return configpolicy.Run(ctx, configpolicy.Options{
			Config: o.SpokeConfig, Namespace: o.ClusterName, Log: o.Log, EventSource: ocm.ConfigPolicyAddon,
		})
	})
	g.Go(func() error {
		err := certpolicy.Run(ctx, certpolicy.Options{Config: o.SpokeConfig, Namespace: o.ClusterName, Log: o.Log.WithName("certpolicy")})
		if err != nil {
			return fmt.Errorf("CertificatePolicy engine: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		err := operatorpolicy.Run(ctx, operatorpolicy.Options{Config: o.SpokeConfig, Namespace: o.ClusterName,
			Log: o.Log.WithName("operatorpolicy"), EventSource: ocm.ConfigPolicyAddon})
		if err != nil {
			return fmt.Errorf("OperatorPolicy engine: %w", err)
		}
		return nil
	})
	return g.Wait()
}

// gatekeeperInstalled reports whether Gatekeeper's ConstraintTemplate CRD
// (not Flotilla's) exists on the managed cluster.
func gatekeeperInstalled(ctx context.Context, cfg *rest.Config) (bool, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return false, err
	}
	crd, err := dyn.Resource(crdsGVR).Get(ctx, live.TemplatesGVR.Resource+"."+live.TemplatesGVR.Group, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look for Gatekeeper's ConstraintTemplate CRD: %w", err)
	}
	return GatekeeperInstalled(crd), nil
}
