package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/hub/deploy"
	"flotilla.dev/flotilla/hub/work"
	"flotilla.dev/flotilla/internal/dburl"
	"flotilla.dev/flotilla/internal/image"
	"flotilla.dev/flotilla/search/index"
)

func newHubCommand() *cobra.Command {
	var (
		o          hub.Options
		kubeconfig string
		kctx       string
		autoUsers  string
		dataDir    string
		// Set by flags, read by searchLimits.
		searchMaxObjects int64
		searchMaxBytes   string
	)
	cmd := &cobra.Command{
		Use:   "hub",
		Short: "Run the Flotilla hub controllers and admission webhooks against a hub apiserver",
		Long: `Run the hub: cluster registration (acceptance, CSR approval, heartbeats, cleanup),
placement and work controllers, and the admission webhooks, which it registers with
the hub apiserver as MutatingWebhookConfiguration "flotilla-hub" (new ManagedClusters
are tainted unreachable) and ValidatingWebhookConfiguration "flotilla-hub".

Memory: unless GOGC or GOMEMLIMIT is set in its environment, the hub runs Go's
garbage collector at GOGC=50 (a lower peak RSS for a little more GC CPU); set
either to choose your own trade-off (GOGC=100 is Go's default).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(klog.Background())
			tuneHubGC(os.Getenv)
			if o.AddonImage == "" {
				o.AddonImage = image.Ref("", imageTag())
			}
			if err := image.CheckRef(o.AddonImage); err != nil {
				return fmt.Errorf("--addon-image: %w", err)
			}
			if err := checkClientLimits(o.QPS, o.Burst); err != nil {
				return err
			}
			cfg, err := restConfig(kubeconfig, kctx)
			if err != nil {
				return err
			}
			o.Config = cfg
			if autoUsers != "" {
				o.Registration.AutoApproveUsers = strings.Split(autoUsers, ",")
			}
			if err := complianceDB(&o, dataDir, os.Getenv); err != nil {
				return err
			}
			if err := searchDB(&o, dataDir, os.Getenv); err != nil {
				return err
			}
			if o.SearchLimits, err = searchLimits(searchMaxObjects, searchMaxBytes); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return hub.Run(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "hub kubeconfig (default: in-cluster config, $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&kctx, "context", "", "kubeconfig context")
	f.StringVar(&autoUsers, "auto-approve-users", "", "comma-separated requesters whose first CSRs are approved without `flotilla accept`, only for a cluster nobody decided on (the hub accepts it) or one whose lease is stale")
	f.IntVar(&o.Registration.LeaseGraceMultiplier, "lease-grace-multiplier", 5, "a cluster whose lease is older than this many leaseDurationSeconds becomes Available=Unknown")
	f.StringVar(&o.Registration.SignerCertFile, "signer-cert", "", "CA certificate of the built-in signer (for hubs whose controller-manager does not sign kube-apiserver-client CSRs)")
	f.StringVar(&o.Registration.SignerKeyFile, "signer-key", "", "CA private key of the built-in signer")
	f.StringVar(&o.AddonImage, "addon-image", "", "image of the shipped addons' agent Deployments (default "+image.Ref("", "<version>")+", as `join` names the klusterlet's; an AddOnDeploymentConfig's registries rewrite it per cluster)")
	f.IntVar(&o.ManifestLimit, "manifest-limit", 0, "largest total manifest size of a ManifestWork in bytes (default 500 KiB)")
	f.BoolVar(&o.NilExecutorValidating, "nil-executor-validating", false, "a ManifestWork without spec.executor (or a ManifestWorkReplicaSet template without one) runs as the work agent itself: admit it only when its requester may execute-as "+work.DefaultExecutorName+" (OCM's NilExecutorValidating)")
	f.StringVar(&o.WebhookHost, "webhook-host", "127.0.0.1", "address the webhook server listens on")
	f.StringVar(&o.WebhookAdvertiseHost, "webhook-advertise-host", "", "address the hub apiserver calls the webhooks at (default: --webhook-host)")
	f.IntVar(&o.WebhookPort, "webhook-port", 0, "webhook server port (default: a free port)")
	f.StringVar(&o.WebhookService, "webhook-service", "", "namespace/name of a Service the apiserver calls the webhooks through (port 443), for a hub running as Pods; the certificate must name <name>.<namespace>.svc")
	f.StringVar(&o.WebhookCertDir, "webhook-cert-dir", "", "folder with tls.crt, tls.key (and optionally ca.crt) for the webhook server (default: a self-signed certificate made at start)")
	f.StringVar(&o.APIAddress, "api-address", "", "an IP of this host, not loopback, to serve the aggregated API (compliance.flotilla.dev) at; the hub registers it as the endpoint of Service "+hub.APIServiceNamespace+"/"+hub.APIServiceName+" (default: behind --webhook-service at --api-port, else not served)")
	f.IntVar(&o.APIPort, "api-port", 0, "aggregated API port (default: a free port, or "+strconv.Itoa(hub.DefaultAPIPort)+" behind --webhook-service)")
	f.StringVar(&o.MetricsAddr, "metrics-bind-address", "0", "Prometheus metrics address (0 = off)")
	f.StringVar(&o.HealthAddr, "health-probe-bind-address", "", "health probe address (empty = off)")
	f.StringVar(&o.PprofAddr, "pprof-bind-address", "", "address serving Go's profiles at /debug/pprof/ (empty = off; keep it on localhost)")
	f.BoolVar(&o.LeaderElection, "leader-elect", false, "elect one active hub among replicas")
	f.Float32Var(&o.QPS, "kube-api-qps", 100, "queries per second the hub's client may send its apiserver")
	f.IntVar(&o.Burst, "kube-api-burst", 200, "burst of the hub's client above --kube-api-qps")
	f.StringVar(&dataDir, "data-dir", defaultHubDataDir(), "folder for the hub's own data (the compliance history's SQLite file)")
	f.StringVar(&o.ComplianceDB, "compliance-db", "", "compliance history database: a SQLite file, a postgres://user:password@host:port/db URL, or off (default: $"+deploy.ComplianceDBEnv+" when set, which keeps a password off the command line; else compliance.db in --data-dir)")
	f.StringVar(&o.SearchDB, "search-db", "", "fleet search index: a SQLite file, a postgres://user:password@host:port/db URL (several hub replicas need one they share), or off (default: $"+searchDBEnv+" when set; else the compliance history's database when it is PostgreSQL; else search.db in --data-dir)")
	f.Int64Var(&searchMaxObjects, "search-max-objects-per-cluster", index.DefaultLimits.Objects, "objects one cluster may keep in the search index, all resources together (0: no limit); a Sync past it is refused")
	f.StringVar(&searchMaxBytes, "search-max-bytes-per-cluster", resource.NewQuantity(index.DefaultLimits.Bytes, resource.BinarySI).String(), "bytes of objects one cluster may keep in the search index, as a quantity such as 512Mi (0: no limit)")
	f.DurationVar(&o.ComplianceRetention, "compliance-retention", 0, "keep compliance events this long, e.g. 8760h (the newest of each policy template on each cluster is always kept; default 0: forever)")
	f.BoolVar(&o.RemoveWebhooksOnStop, "remove-webhooks-on-stop", false, "remove the webhook configuration on a clean stop (by default it stays, so a stopped hub keeps refusing unchecked accepts)")
	return cmd
}

// defaultHubDataDir is $XDG_STATE_HOME/flotilla/hub, else
// ~/.local/state/flotilla/hub.
func defaultHubDataDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "flotilla", "hub")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "flotilla", "hub")
	}
	return filepath.Join(os.TempDir(), "flotilla-hub")
}

// searchLimits reads --search-max-objects-per-cluster and
// --search-max-bytes-per-cluster.
func searchLimits(objects int64, bytes string) (index.Limits, error) {
	if objects < 0 {
		return index.Limits{}, fmt.Errorf("--search-max-objects-per-cluster %d: give a number of objects, 0 for no limit", objects)
	}
	q, err := resource.ParseQuantity(bytes)
	// Value rounds a fraction of a byte up, and gives 0 (no limit at all)
	// for a decimal size past int64: only a size it holds exactly is taken.
	n := q.Value()
	if err != nil || n < 0 || q.Cmp(*resource.NewQuantity(n, resource.BinarySI)) != 0 {
		return index.Limits{}, fmt.Errorf("--search-max-bytes-per-cluster %q: give a whole size such as 512Mi or 2Gi, 0 for no limit", bytes)
	}
	return index.Limits{Objects: objects, Bytes: n}, nil
}

// searchDBEnv is the variable --search-db defaults to (a PostgreSQL URL
// from a Secret, kept off the command line).
const searchDBEnv = "FLOTILLA_SEARCH_DB"

// searchDB resolves --search-db as complianceDB does --compliance-db:
// "off" keeps no index, "" is $FLOTILLA_SEARCH_DB when set, else the
// compliance history's database when it is PostgreSQL (their tables do not
// meet; hub replicas then share both), else search.db in the data dir.
func searchDB(o *hub.Options, dataDir string, getenv func(string) string) error {
	if o.SearchDB == "" {
		o.SearchDB = strings.TrimSpace(getenv(searchDBEnv))
	}
	if o.SearchDB == "" && dburl.IsPostgres(o.ComplianceDB) {
		o.SearchDB = o.ComplianceDB
	}
	switch o.SearchDB {
	case "off":
		o.SearchDB = ""
	case "":
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return fmt.Errorf("--data-dir %s: %w (or pass --search-db off)", dataDir, err)
		}
		o.SearchDB = filepath.Join(dataDir, "search.db")
	}
	return nil
}

// complianceDB resolves --compliance-db: "off" records no history, "" is
// $FLOTILLA_COMPLIANCE_DB when set (the hub Pods of `init --deploy` get a
// Secret's URL there), else compliance.db in the data dir (created if
// missing).
func complianceDB(o *hub.Options, dataDir string, getenv func(string) string) error {
	if o.ComplianceDB == "" {
		o.ComplianceDB = strings.TrimSpace(getenv(deploy.ComplianceDBEnv))
	}
	switch o.ComplianceDB {
	case "off":
		o.ComplianceDB = ""
		return nil
	case "":
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return fmt.Errorf("--data-dir %s: %w (or pass --compliance-db off)", dataDir, err)
		}
		o.ComplianceDB = filepath.Join(dataDir, "compliance.db")
	}
	if o.ComplianceRetention < 0 {
		return fmt.Errorf("--compliance-retention %s: must not be negative", o.ComplianceRetention)
	}
	return nil
}
