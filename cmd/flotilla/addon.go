package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/addons/ops"
)

// newAddonCommand is `flotilla addon enable|disable` (clusteradm's verbs and flags).
func newAddonCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "addon", Short: "Enable or disable addons on managed clusters"}
	cmd.AddCommand(newAddonEnableCommand(), newAddonDisableCommand())
	return cmd
}

func newAddonEnableCommand() *cobra.Command {
	var (
		kubeconfig, kctx string
		o                ops.EnableOptions
		annotate         []string
	)
	cmd := &cobra.Command{
		Use:   "enable --names a,b --clusters c1,c2",
		Short: "Enable addons on clusters (creates their ManagedClusterAddOns)",
		Example: `  flotilla addon enable --names example --clusters cluster1,cluster2
  flotilla addon enable --names example --clusters cluster1 --namespace my-addons --annotate team=infra`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Annotations, err = parseAnnotations(annotate); err != nil {
				return err
			}
			c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			done, err := ops.Enable(cmd.Context(), c, o)
			for _, d := range done {
				fmt.Fprintf(cmd.OutOrStdout(), "addon enabled: %s\n", d)
			}
			return err
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	f.StringSliceVar(&o.Names, "names", nil, "addons to enable (comma-separated)")
	f.StringSliceVar(&o.Clusters, "clusters", nil, "clusters to enable them on (comma-separated)")
	f.StringVar(&o.Namespace, "namespace", "", "install namespace of the agents (default: the addon's, open-cluster-management-agent-addon)")
	f.StringSliceVar(&annotate, "annotate", nil, "annotations k=v for the ManagedClusterAddOns")
	return cmd
}

func newAddonDisableCommand() *cobra.Command {
	var (
		kubeconfig, kctx string
		o                ops.DisableOptions
	)
	cmd := &cobra.Command{
		Use:   "disable --names a --clusters c1 | --all-clusters",
		Short: "Disable addons (deletes their ManagedClusterAddOns; the hub removes the agents)",
		Example: `  flotilla addon disable --names example --clusters cluster1
  flotilla addon disable --names example --all-clusters`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := hubClient(kubeconfig, kctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			done, err := ops.Disable(cmd.Context(), c, o)
			for _, d := range done {
				fmt.Fprintf(cmd.OutOrStdout(), "addon disabled: %s\n", d)
			}
			return err
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	f.StringSliceVar(&o.Names, "names", nil, "addons to disable (comma-separated)")
	f.StringSliceVar(&o.Clusters, "clusters", nil, "clusters to disable them on (comma-separated)")
	f.BoolVar(&o.AllClusters, "all-clusters", false, "disable them on every cluster")
	return cmd
}

// parseAnnotations turns k=v flags into a map, naming a malformed one.
func parseAnnotations(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--annotate %q is not key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}
