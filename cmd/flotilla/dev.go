package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/devenv"
	"flotilla.dev/flotilla/internal/image"
	"flotilla.dev/flotilla/internal/printer"
)

func newDevCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run Flotilla's local default: a hub and managed clusters on this machine",
		Long: "The local default runs a hub and N managed clusters as real control planes " +
			"(etcd, kube-apiserver, kube-controller-manager built from source by `make controlplane`) " +
			"in the background, keeping their data in one folder.",
	}
	var opts devenv.Options
	cmd.PersistentFlags().StringVar(&opts.DataDir, "data-dir", devenv.DefaultDataDir, "Folder that holds the environment's data")
	cmd.PersistentFlags().StringVar(&opts.ControlPlaneDir, "controlplane-dir", "", "Folder with etcd, kube-apiserver and kube-controller-manager (default: $FLOTILLA_CONTROLPLANE_DIR or bin/controlplane)")
	cmd.AddCommand(newDevUpCommand(&opts), newDevDownCommand(&opts), newDevStatusCommand(&opts), newDevPauseCommand(),
		newDevPartitionCommand(&opts), newDevHealCommand(&opts))
	return cmd
}

// newDevPauseCommand is what the nodes' Pod sandboxes run (the pause image is
// the flotilla binary): it waits for SIGTERM or SIGINT and exits.
func newDevPauseCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "pause",
		Short:  "Hold a Pod sandbox open until stopped (the nodes' pause image runs this)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
}

func newDevUpCommand(opts *devenv.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the hub and managed clusters (no-op when already running; resumes a stopped environment)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o := *opts
			o.Out = cmd.OutOrStdout()
			if o.Image == "" {
				o.Image = image.Ref("", imageTag())
			}
			res, err := devenv.Up(ctx, o)
			if err != nil {
				return err
			}
			printUpSummary(cmd.OutOrStdout(), res)
			return nil
		},
	}
	cmd.Flags().IntVar(&opts.Clusters, "clusters", 0, fmt.Sprintf("Number of managed clusters, cluster1..clusterN (default %d for a new environment)", devenv.DefaultClusters))
	cmd.Flags().BoolVar(&opts.Nodes, "nodes", false, "Give each managed cluster a real node (containerd and kubelet; needs root and "+
		"Debian's containerd, runc, containernetworking-plugins and iptables) and run each klusterlet as a Pod from the flotilla image")
	cmd.Flags().StringVar(&opts.Image, "image", "", "Name of the flotilla image the nodes run, built from this binary (default "+image.Ref("", "<version>")+")")
	return cmd
}

// imageTag is the tag of the image this binary builds and `join` installs:
// its version, or "latest" for a build without one.
func imageTag() string {
	if version == "" || version == "dev" {
		return "latest"
	}
	return version
}

func printUpSummary(w io.Writer, res *devenv.Result) {
	st := res.Status
	dir := relPath(st.DataDir)
	if res.AlreadyRunning {
		fmt.Fprintf(w, "Flotilla is already running in %s; nothing to do.\n\n", dir)
	} else {
		fmt.Fprintf(w, "\nFlotilla is running in %s.\n\n", dir)
	}
	_ = printer.WriteTable(w, statusRows(st))
	fmt.Fprintf(w, "\nTry:\n")
	fmt.Fprintf(w, "  kubectl --kubeconfig %s/hub.kubeconfig get managedclusters\n", dir)
	fmt.Fprintf(w, "  flotilla get clusters --kubeconfig %s/hub.kubeconfig\n", dir)
	for _, c := range st.Components {
		if c.Kind == "node" {
			fmt.Fprintf(w, "  kubectl --kubeconfig %s/clusters/cluster1.kubeconfig get nodes,pods -A -o wide\n", dir)
			break
		}
	}
	fmt.Fprintf(w, "Stop it with `flotilla dev down --data-dir %s` (data is kept; `dev up` resumes).\n", dir)
}

func newDevDownCommand(opts *devenv.Options) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop everything `dev up` started, keeping its data",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stopped, err := devenv.Down(*opts)
			for _, s := range stopped {
				fmt.Fprintf(cmd.OutOrStdout(), "stopped %s\n", s)
			}
			if err != nil {
				return err
			}
			if len(stopped) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "nothing was running in %s\n", relPath(opts.DataDir))
			}
			return nil
		},
	}
}

func newDevStatusCommand(opts *devenv.Options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show what runs in the local environment",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := printer.Validate(output); err != nil {
				return err
			}
			st, err := devenv.Get(*opts)
			if err != nil {
				return err
			}
			return printer.Print(cmd.OutOrStdout(), output, st, func() printer.Rows { return statusRows(st) })
		},
	}
	printer.AddFlag(cmd, &output)
	return cmd
}

func statusRows(st *devenv.Status) printer.Rows {
	rows := printer.Rows{Header: []string{"NAME", "KIND", "STATE", "HUB", "URL", "KUBECONFIG", "PIDS"}}
	for _, c := range st.Components {
		var pids []string
		for _, comp := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "containerd", "kubelet", "flotilla"} {
			if pid, ok := c.PIDs[comp]; ok {
				pids = append(pids, fmt.Sprint(pid))
			}
		}
		kubeconfig := ""
		if c.Kubeconfig != "" {
			kubeconfig = relPath(c.Kubeconfig)
		}
		rows.Add(c.Name, c.Kind, c.State, dash(string(c.Hub)), dash(c.URL), dash(kubeconfig), dash(strings.Join(pids, ",")))
	}
	return rows
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// relPath shows a path relative to the working directory when it lies below it.
func relPath(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}
