package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"flotilla.dev/flotilla/manifests"
	"flotilla.dev/flotilla/policy/certpolicy"
	"flotilla.dev/flotilla/policy/configpolicy"
	"flotilla.dev/flotilla/policy/gatekeeper/live"
	"flotilla.dev/flotilla/policy/operatorpolicy"
)

// policyRunOptions are the flags of `flotilla policy run`.
type policyRunOptions struct {
	kubeconfig  string
	namespace   string
	workers     int
	qps         float32
	burst       int
	metricsAddr string
	pprofAddr   string
	installCRDs bool
	gatekeeper  string
}

func newPolicyRunCommand() *cobra.Command {
	o := policyRunOptions{}
	cmd := &cobra.Command{
		Use:   "run --kubeconfig K",
		Short: "Run the ConfigurationPolicy, CertificatePolicy and OperatorPolicy engines against a cluster until interrupted",
		Long: `Runs the ConfigurationPolicy engine standalone against the cluster of
--kubeconfig: it evaluates every ConfigurationPolicy (or those of --namespace)
whenever a watched object or the policy changes, enforces the enforce ones and
writes their status, history and compliance events. Metrics are served on
--metrics-addr at /metrics. Beside it, the CertificatePolicy engine checks the
TLS certificates in the Secrets each CertificatePolicy selects, whenever a
Secret, a namespace or the policy changes and when a certificate comes within
its minimum duration; and the OperatorPolicy engine installs and governs
operators through OLM (NonCompliant where OLM is not installed).

The identity of the kubeconfig needs to list and watch every kind the policies
name, and to create, update and delete them for enforce; and to list and watch
Secrets and Namespaces for CertificatePolicies.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkClientLimits(o.qps, o.burst); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runPolicyEngine(ctx, cmd, o)
		},
	}
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to govern (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", "namespace of the ConfigurationPolicies to run (default: all namespaces)")
	cmd.Flags().IntVar(&o.workers, "workers", 4, "policies evaluated at once")
	cmd.Flags().Float32Var(&o.qps, "kube-api-qps", 200, "queries per second the engine's client may send the apiserver")
	cmd.Flags().IntVar(&o.burst, "kube-api-burst", 400, "burst of the engine's client above --kube-api-qps")
	cmd.Flags().StringVar(&o.metricsAddr, "metrics-addr", "127.0.0.1:8383", "address serving Prometheus metrics at /metrics (empty: off)")
	cmd.Flags().StringVar(&o.pprofAddr, "pprof-bind-address", "", "address serving Go's profiles at /debug/pprof/ (empty = off; keep it on localhost)")
	cmd.Flags().BoolVar(&o.installCRDs, "install-crds", false, "install or update the policy CRDs on the cluster first (and the ConstraintTemplate CRD where Gatekeeper is absent)")
	cmd.Flags().StringVar(&o.gatekeeper, "gatekeeper-audit", "auto", "audit Gatekeeper ConstraintTemplates and constraints with Flotilla's own Rego engine: auto (when the cluster has no Gatekeeper), on, off")
	return cmd
}

func runPolicyEngine(ctx context.Context, cmd *cobra.Command, o policyRunOptions) error {
	out := cmd.ErrOrStderr()
	cfg, err := restConfig(o.kubeconfig, "")
	if err != nil {
		return err
	}
	if o.installCRDs {
		fmt.Fprintf(out, "==> installing the policy CRDs on %s\n", cfg.Host)
		if err := manifests.InstallCRDs(ctx, cfg, manifests.PolicyCRDs); err != nil {
			return err
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Addr: o.metricsAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintf(out, "metrics server: %v\n", err)
			}
		}()
		defer srv.Close()
		fmt.Fprintf(out, "==> metrics on http://%s/metrics\n", o.metricsAddr)
	}
	if o.pprofAddr != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		srv := &http.Server{Addr: o.pprofAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintf(out, "pprof server: %v\n", err)
			}
		}()
		defer srv.Close()
		fmt.Fprintf(out, "==> profiles on http://%s/debug/pprof/\n", o.pprofAddr)
	}
	where := "all namespaces"
	if o.namespace != "" {
		where = "namespace " + o.namespace
	}
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(out, time.Now().UTC().Format(time.RFC3339), prefix, args) },
		funcr.Options{})
	audit, err := gatekeeperAudit(ctx, cfg, o.gatekeeper)
	if err != nil {
		return err
	}
	if audit {
		_, err := live.Start(ctx, live.Options{Config: cfg, InstallTemplateCRD: o.installCRDs, Log: log})
		switch {
		case err == nil:
			fmt.Fprintf(out, "==> auditing Gatekeeper constraints with Flotilla's Rego engine (no Gatekeeper on %s)\n", cfg.Host)
		case o.gatekeeper == "on":
			return fmt.Errorf("gatekeeper audit: %w", err)
		default:
			fmt.Fprintf(out, "==> not auditing Gatekeeper constraints: %v\n", err)
		}
	}
	fmt.Fprintf(out, "==> running ConfigurationPolicies, CertificatePolicies and OperatorPolicies of %s against %s (Ctrl-C stops)\n", where, cfg.Host)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return configpolicy.Run(ctx, configpolicy.Options{
			Config: cfg, Namespace: o.namespace, Workers: o.workers, QPS: o.qps, Burst: o.burst,
			Metrics: configpolicy.NewMetrics(reg),
			Log:     log,
		})
	})
	g.Go(func() error {
		if err := certpolicy.Run(ctx, certpolicy.Options{Config: cfg, Namespace: o.namespace, Log: log.WithName("certpolicy")}); err != nil {
			return fmt.Errorf("CertificatePolicy engine: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		if err := operatorpolicy.Run(ctx, operatorpolicy.Options{Config: cfg, Namespace: o.namespace, Log: log.WithName("operatorpolicy")}); err != nil {
			return fmt.Errorf("OperatorPolicy engine: %w", err)
		}
		return nil
	})
	return g.Wait()
}

// checkClientLimits refuses --kube-api-qps and --kube-api-burst values a
// client cannot run with (a zero or negative limit, or a burst below one
// second's worth of queries).
func checkClientLimits(qps float32, burst int) error {
	switch {
	case qps <= 0:
		return fmt.Errorf("--kube-api-qps %g: must be above 0", qps)
	case burst < int(qps):
		return fmt.Errorf("--kube-api-burst %d: must be at least --kube-api-qps (%g)", burst, qps)
	}
	return nil
}

// gatekeeperAudit decides whether Flotilla audits Gatekeeper constraints
// itself: "auto" does when the cluster runs no Gatekeeper (its audit
// Deployment in gatekeeper-system is absent), "on" always, "off" never.
func gatekeeperAudit(ctx context.Context, cfg *rest.Config, mode string) (bool, error) {
	switch mode {
	case "on":
		return true, nil
	case "off":
		return false, nil
	case "auto", "":
	default:
		return false, fmt.Errorf("--gatekeeper-audit %q: use auto, on or off", mode)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false, err
	}
	_, err = kube.AppsV1().Deployments("gatekeeper-system").Get(ctx, "gatekeeper-audit", metav1.GetOptions{})
	switch {
	case err == nil:
		return false, nil
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return true, nil
	}
	return false, fmt.Errorf("--gatekeeper-audit auto: cannot tell whether Gatekeeper runs: %w", err)
}
