package governance

import (
	"context"

	"k8s.io/client-go/rest"

	"flotilla.dev/flotilla/policy/configpolicy"
)

// RunConfigPolicyAgent runs the config-policy-controller agent until ctx
// ends: the ConfigurationPolicy engine (the same runner as `flotilla policy
// run`, watch-driven) on the ConfigurationPolicies of the cluster namespace,
// once the addon's hub credential exists (the addon is enabled and
// registered), and the addon's Lease.
func RunConfigPolicyAgent(ctx context.Context, o AgentOptions) error {
	if err := o.defaults(ConfigPolicyName); err != nil {
		return err
	}
	return runWithCredential(ctx, ConfigPolicyName, o, func(ctx context.Context, _ *rest.Config) error {
		o.Log.Info("running the ConfigurationPolicy engine", "namespace", o.ClusterName)
		return configpolicy.Run(ctx, configpolicy.Options{
			Config: o.SpokeConfig, Namespace: o.ClusterName, Log: o.Log, EventSource: ConfigPolicyName,
		})
	})
}
