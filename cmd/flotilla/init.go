package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/hub/deploy"
	"flotilla.dev/flotilla/hub/registration/bootstrap"
	"flotilla.dev/flotilla/internal/image"
	"flotilla.dev/flotilla/internal/printer"
)

func newInitCommand() *cobra.Command {
	var (
		o          bootstrap.Options
		kubeconfig string
		kctx       string
		output     string
		joinFile   string
		waitHub    bool
		timeout    time.Duration
		deployHub  bool
		hubImage   string
		addonImage string
		signers    []string
		nilExec    bool
		store      deploy.Options // the compliance history's store
	)
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Prepare a hub: CRDs, registration RBAC, the bootstrap identity, and a join token",
		Long: `Install the Open Cluster Management hub CRDs with Flotilla's admission policies
(ValidatingAdmissionPolicies named flotilla-*, see docs/admission.md), the registration RBAC and the bootstrap
identity (ServiceAccount open-cluster-management/agent-registration-bootstrap bound to
exactly the bootstrap permissions) on the hub, mint a bootstrap token with the
TokenRequest API and print the join command for managed clusters.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := printer.Validate(output); err != nil {
				return err
			}
			if !deployHub && (addonImage != "" || len(signers) > 0 || nilExec) {
				return fmt.Errorf("--addon-image, --addon-signers and --nil-executor-validating configure the hub that --deploy installs: add --deploy, or give `flotilla hub` these flags yourself")
			}
			if !deployHub && (store.ComplianceDBSecret != "" || store.CompliancePVC != "" || store.CompliancePVCSize != "") {
				return fmt.Errorf("--compliance-db-secret, --compliance-pvc and --compliance-pvc-size choose where the hub that --deploy installs keeps its compliance history: add --deploy, or give `flotilla hub` --compliance-db yourself")
			}
			img := hubImage
			if img == "" {
				img = image.Ref("", imageTag())
			}
			dopts := deploy.Options{Image: img, AddonImage: addonImage, AddonSigners: signers,
				NilExecutorValidating: nilExec, ComplianceDBSecret: store.ComplianceDBSecret, CompliancePVC: store.CompliancePVC,
				CompliancePVCSize: store.CompliancePVCSize, Timeout: timeout, Progress: cmd.ErrOrStderr()}
			if deployHub {
				// Bad flags fail before anything changes on the hub.
				if _, err := deploy.Render(dopts); err != nil {
					return err
				}
			}
			cfg, err := restConfig(kubeconfig, kctx)
			if err != nil {
				return err
			}
			o.Config = cfg
			if deployHub {
				dopts.Config = cfg
				if err := deploy.Check(cmd.Context(), dopts); err != nil {
					return err
				}
			}
			o.Progress = cmd.ErrOrStderr()
			res, err := bootstrap.Init(cmd.Context(), o)
			if err != nil {
				return err
			}
			if joinFile != "" {
				if err := os.WriteFile(joinFile, []byte(res.JoinCommand+"\n"), 0o600); err != nil {
					return fmt.Errorf("--output-join-command-file: %w", err)
				}
			}
			if deployHub {
				if err := deploy.Apply(cmd.Context(), dopts); err != nil {
					return err
				}
			}
			if waitHub {
				if err := bootstrap.WaitForHub(cmd.Context(), cfg, timeout, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			return printToken(cmd.OutOrStdout(), output, res)
		},
	}
	f := cmd.Flags()
	addHubKubeconfigFlags(f, &kubeconfig, &kctx)
	f.DurationVar(&o.TokenTTL, "token-ttl", bootstrap.DefaultTokenTTL, "life of the bootstrap token")
	f.StringVar(&o.HubAPIServer, "hub-apiserver", "", "hub address printed in the join command (default: the kubeconfig's server)")
	f.StringVar(&joinFile, "output-join-command-file", "", "also write the join command to this file (mode 0600)")
	f.BoolVar(&waitHub, "wait", false, "wait until a Flotilla hub (`flotilla hub`) serves this apiserver")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "how long --wait and --deploy wait")
	f.BoolVar(&deployHub, "deploy", false, "also run the hub in this cluster: two replicas with leader election, webhooks behind a Service (namespace "+deploy.Namespace+")")
	f.StringVar(&hubImage, "image", "", "hub image for --deploy (default "+image.Ref("", "<version>")+")")
	f.StringVar(&addonImage, "addon-image", "", "with --deploy: image of the shipped addons' agents, the hub's --addon-image (default: the hub image)")
	f.StringSliceVar(&signers, "addon-signers", nil, "with --deploy: custom signers (<domain>/<path> or <domain>/*) of addons' CustomSigner registrations the hub may approve and sign (default none)")
	f.BoolVar(&nilExec, "nil-executor-validating", false, "with --deploy: the hub's --nil-executor-validating (a ManifestWork without spec.executor needs execute-as on the agent's identity)")
	f.StringVar(&store.ComplianceDBSecret, "compliance-db-secret", "", "with --deploy: a Secret in "+deploy.Namespace+" whose key \""+deploy.ComplianceDBKey+"\" holds a postgres:// URL: the compliance history goes to that PostgreSQL, shared by both replicas (the choice for HA and scale; default: an emptyDir per Pod, lost with it)")
	f.StringVar(&store.CompliancePVC, "compliance-pvc", "", "with --deploy: a PersistentVolumeClaim in "+deploy.Namespace+" for the compliance history (SQLite); the hub then runs one replica (for a small hub; not with --compliance-db-secret)")
	f.StringVar(&store.CompliancePVCSize, "compliance-pvc-size", "", "with --compliance-pvc: create the claim with this size (e.g. 1Gi, ReadWriteOnce, default StorageClass) when it does not exist")
	printer.AddFlag(cmd, &output)
	return cmd
}

// printToken prints a bootstrap token: the join command as a table line, or the
// whole result as JSON or YAML.
func printToken(w io.Writer, format string, res *bootstrap.Result) error {
	if format == printer.Table || format == "" {
		_, err := fmt.Fprintf(w, "Run this on each managed cluster (token valid until %s):\n\n    %s\n\nReplace <cluster_name> with the cluster's name.\n",
			res.ExpiresAt.Format(time.RFC3339), res.JoinCommand)
		return err
	}
	return printer.Print(w, format, res, nil)
}
