package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/hub/registration/accept"
)

func newAcceptCommand() *cobra.Command {
	var (
		o          accept.Options
		clusters   string
		kubeconfig string
		kctx       string
	)
	cmd := &cobra.Command{
		Use:   "accept --clusters a,b",
		Short: "Accept managed clusters: approve their bootstrap CSRs and set hubAcceptsClient",
		Long: `Accept clusters that asked to join. For each cluster, approve its pending CSR made by
the bootstrap identity and set spec.hubAcceptsClient=true. Accepting an accepted cluster
says so and succeeds.

accept refuses, listing the CSRs with their requesters and key fingerprints, when more
than one bootstrap CSR is pending for a cluster (anyone with a bootstrap token can copy
an agent's name; delete the wrong CSRs first), and when a cluster that already joined
asks again with its bootstrap identity, unless --force is given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := restConfig(kubeconfig, kctx)
			if err != nil {
				return err
			}
			o.Config = cfg
			for _, c := range strings.Split(clusters, ",") {
				if c = strings.TrimSpace(c); c != "" {
					o.Clusters = append(o.Clusters, c)
				}
			}
			o.Progress = cmd.OutOrStdout()
			return accept.Accept(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&clusters, "clusters", "", "comma-separated names of the clusters to accept (required)")
	f.BoolVar(&o.Force, "force", false, "approve a new bootstrap CSR of a cluster that already joined (its agent lost its credential); check the CSR's requester and key first")
	f.BoolVar(&o.Wait, "wait", false, "wait for each cluster's ManagedCluster and CSR to appear")
	f.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long --wait waits")
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	_ = cmd.MarkFlagRequired("clusters")
	return cmd
}
