package main

import (
	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/internal/image"
	"flotilla.dev/flotilla/klusterlet/join"
	"flotilla.dev/flotilla/klusterlet/registration"
)

func newJoinCommand() *cobra.Command {
	var (
		o          join.Options
		kubeconfig string
		kctx       string
		registry   string
		bundle     string
	)
	cmd := &cobra.Command{
		Use:   "join --hub-token TOKEN --hub-apiserver URL --cluster-name NAME",
		Short: "Ask a hub to manage this cluster: install the klusterlet with a bootstrap token",
		Long: `Run against the managed cluster (its kubeconfig/context). Join checks the hub address,
CA and token first and writes nothing when one is wrong; then it writes the bootstrap
kubeconfig secret and the klusterlet (namespace, ServiceAccount, RBAC, Deployment). The
hub admin then approves the cluster with ` + "`flotilla accept --clusters NAME`" + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := restConfig(kubeconfig, kctx)
			if err != nil {
				return err
			}
			o.SpokeConfig = cfg
			o.Progress = cmd.ErrOrStderr()
			if o.Image, err = join.ImageFor(o.Image, registry, bundle, imageTag()); err != nil {
				return err
			}
			return join.Join(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.HubToken, "hub-token", "", "bootstrap token from `flotilla init` or `flotilla get token` (required)")
	f.StringVar(&o.HubAPIServer, "hub-apiserver", "", "hub apiserver URL (required)")
	f.StringVar(&o.ClusterName, "cluster-name", "", "this cluster's name on the hub, a DNS label (required)")
	f.StringVar(&o.CAHash, "ca-hash", "", "pin the hub CA: sha256:<hex> of its public key, as printed by `flotilla init`; join refuses another CA")
	f.StringVar(&o.CAFile, "ca-file", "", "hub CA bundle (default: read from the hub's kube-public/cluster-info)")
	f.BoolVar(&o.Wait, "wait", false, "wait until the hub accepted the cluster and the agent holds its credential")
	f.DurationVar(&o.Timeout, "timeout", 0, "how long --wait waits (default 5m)")
	f.StringVar(&o.AgentNamespace, "agent-namespace", registration.DefaultAgentNamespace, "namespace of the klusterlet on the managed cluster")
	f.StringVar(&o.Image, "image", "", "klusterlet image, in full (default "+image.Ref("", "<version>")+"; overrides --image-registry and --bundle-version)")
	f.StringVar(&registry, "image-registry", image.DefaultRegistry, "registry (and path) the klusterlet image is pulled from, as clusteradm's --image-registry")
	f.StringVar(&bundle, "bundle-version", "", "tag of the klusterlet image, as clusteradm's --bundle-version (default: this flotilla's version)")
	f.BoolVar(&o.NoDeployment, "no-deployment", false, "write only the bootstrap secret; run the agent yourself with `flotilla klusterlet`")
	f.StringVar(&kubeconfig, "kubeconfig", "", "managed cluster kubeconfig (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&kctx, "context", "", "kubeconfig context")
	for _, name := range []string{"hub-token", "hub-apiserver", "cluster-name"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}
