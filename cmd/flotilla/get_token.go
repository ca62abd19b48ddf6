package main

import (
	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/hub/registration/bootstrap"
	"flotilla.dev/flotilla/internal/printer"
)

// newGetTokenCommand is `flotilla get token`.
func newGetTokenCommand() *cobra.Command {
	var (
		o          bootstrap.Options
		kubeconfig string
		kctx       string
		output     string
	)
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Mint a bootstrap token and print the join command for new clusters",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := printer.Validate(output); err != nil {
				return err
			}
			cfg, err := restConfig(kubeconfig, kctx)
			if err != nil {
				return err
			}
			o.Config = cfg
			res, err := bootstrap.Token(cmd.Context(), o)
			if err != nil {
				return err
			}
			return printToken(cmd.OutOrStdout(), output, res)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.TokenTTL, "token-ttl", bootstrap.DefaultTokenTTL, "life of the bootstrap token")
	f.StringVar(&o.HubAPIServer, "hub-apiserver", "", "hub address printed in the join command (default: the kubeconfig's server)")
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	printer.AddFlag(cmd, &output)
	return cmd
}
