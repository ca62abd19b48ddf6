package agent

import (
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"flotilla.dev/flotilla/internal/kubeconfig"
	"flotilla.dev/flotilla/internal/ocm"
)

// NewCommand is the search agent's command line, named use: `flotilla
// addon-agent search` and the slim flotilla-search-agent binary (the one the
// addon's Pods run, a fraction of flotilla's size and memory) both run it.
func NewCommand(use string) *cobra.Command {
	var (
		o               Options
		kubeconfigPath  string
		kctx, resources string
	)
	cmd := &cobra.Command{
		Use:   use + " --cluster-name NAME",
		Short: "Run the fleet search agent (sends the cluster's objects to the hub's search index)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kubeconfig.RESTConfig(kubeconfigPath, kctx)
			if err != nil {
				return err
			}
			o.SpokeConfig = cfg
			o.Log = klog.Background()
			if resources != "" {
				o.Resources = strings.Split(resources, ",")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return Run(klog.NewContext(ctx, o.Log), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ClusterName, "cluster-name", "", "the managed cluster's name on the hub (required)")
	f.StringVar(&o.Namespace, "namespace", ocm.DefaultAddonInstallNamespace, "install namespace (its Lease and hub credential Secret)")
	f.StringVar(&kubeconfigPath, "kubeconfig", "", "managed cluster kubeconfig (default: in-cluster config, $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&kctx, "context", "", "kubeconfig context")
	f.StringVar(&resources, "resources", "", "comma-separated resources to search (pods,deployments.apps,...; default: "+strings.Join(DefaultResources, ",")+")")
	f.DurationVar(&o.FlushInterval, "flush-interval", 200*time.Millisecond, "how long changes gather before they are sent")
	f.DurationVar(&o.ResyncInterval, "resync-interval", 10*time.Minute, "how often the agent compares its digests with the hub's")
	f.DurationVar(&o.LeaseDuration, "lease-duration", 60*time.Second, "duration written on the Lease (stale after 5x)")
	return cmd
}
