package main

import (
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"flotilla.dev/flotilla/internal/fileinput"
	"flotilla.dev/flotilla/klusterlet"
	"flotilla.dev/flotilla/klusterlet/registration"
)

func newKlusterletCommand() *cobra.Command {
	var (
		o          klusterlet.Options
		kubeconfig string
		kctx       string
		bootstrap  string
		lease      int32
		certExpiry int32
	)
	cmd := &cobra.Command{
		Use:   "klusterlet --cluster-name NAME",
		Short: "Run the agent of one managed cluster (registration, then work)",
		Long: `Run the klusterlet: it registers the managed cluster with the hub using the bootstrap
kubeconfig (secret bootstrap-hub-kubeconfig written by ` + "`flotilla join`" + `, or --bootstrap-kubeconfig),
waits for the hub admin to accept it, keeps its credential in hub-kubeconfig-secret,
renews its lease, reports its status, and runs the work agent.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(klog.Background())
			cfg, err := restConfig(kubeconfig, kctx)
			if err != nil {
				return err
			}
			o.Registration.SpokeConfig = cfg
			o.Registration.LeaseDurationSeconds = lease
			o.Registration.ClientCertExpirationSeconds = certExpiry
			if bootstrap != "" {
				if o.Registration.BootstrapKubeconfig, err = fileinput.ReadFile(bootstrap, fileinput.CredentialLimit, "kubeconfig files"); err != nil {
					return fmt.Errorf("--bootstrap-kubeconfig: %w", err)
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return klusterlet.Run(ctx, o)
		},
	}
	f := cmd.Flags()
	r := &o.Registration
	f.StringVar(&r.ClusterName, "cluster-name", "", "the managed cluster's name on the hub (required)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "managed cluster kubeconfig (default: in-cluster config, $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&kctx, "context", "", "kubeconfig context")
	f.StringVar(&bootstrap, "bootstrap-kubeconfig", "", "bootstrap hub kubeconfig file (default: secret bootstrap-hub-kubeconfig in the agent namespace)")
	f.StringVar(&r.AgentNamespace, "agent-namespace", registration.DefaultAgentNamespace, "namespace of the agent's secrets on the managed cluster")
	f.StringVar(&r.AgentName, "agent-name", "", "agent name in the certificate (default: kept in hub-kubeconfig-secret, else random)")
	f.StringVar(&r.HubKubeconfigDir, "hub-kubeconfig-dir", "", "folder for the hub kubeconfig and certificate files (default: a temporary folder)")
	f.StringSliceVar(&r.ExternalServerURLs, "cluster-url", nil, "the managed cluster's apiserver URLs to publish on the hub (default: the kubeconfig's server)")
	f.Int32Var(&lease, "lease-duration-seconds", registration.DefaultLeaseDurationSeconds, "heartbeat period set on a new ManagedCluster")
	f.Int32Var(&certExpiry, "client-cert-expiration-seconds", 0, "life asked for the hub client certificate (0 = the signer's default)")
	f.DurationVar(&r.StatusSyncInterval, "status-sync-interval", 10*time.Second, "how often the cluster's status is reported")
	f.BoolVar(&o.DisableWork, "disable-work", false, "run registration only")
	_ = cmd.MarkFlagRequired("cluster-name")
	return cmd
}
