package hub

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"flotilla.dev/flotilla/addons"
	"flotilla.dev/flotilla/addons/framework"
	"flotilla.dev/flotilla/hub/addonconversion"
	"flotilla.dev/flotilla/hub/placement"
	"flotilla.dev/flotilla/hub/registration"
	"flotilla.dev/flotilla/hub/registration/health"
	"flotilla.dev/flotilla/hub/registration/rbac"
	regwebhook "flotilla.dev/flotilla/hub/registration/webhook"
	"flotilla.dev/flotilla/hub/work"
	"flotilla.dev/flotilla/internal/admissionclient"
	"flotilla.dev/flotilla/internal/httplimit"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/internal/tolerant"
	"flotilla.dev/flotilla/policy/compliance/web"
	"flotilla.dev/flotilla/policy/propagator"
	"flotilla.dev/flotilla/search/index"
)

// WebhookConfigurationName is the ValidatingWebhookConfiguration and the
// MutatingWebhookConfiguration the hub owns (`flotilla init` registers a
// fail-closed placeholder of each under the same name).
const WebhookConfigurationName = regwebhook.ConfigurationName

// Options configures the hub process. Every field documents its default.
type Options struct {
	// Config reaches the hub apiserver. Required.
	Config *rest.Config
	// Registration configures cluster registration (auto-approve users, lease
	// grace, built-in signer). Default: registration.Options{}.
	Registration registration.Options
	// ManifestLimit is the largest total manifest size of a ManifestWork in bytes.
	// Default 0 = work's own default (500 KiB).
	ManifestLimit int
	// NilExecutorValidating makes a ManifestWork without spec.executor (and a
	// ManifestWorkReplicaSet template without one) need execute-as on
	// work.DefaultExecutorName, the agent's own identity (OCM's hub feature
	// gate NilExecutorValidating). Default false, as in OCM.
	NilExecutorValidating bool
	// WebhookHost is the address the webhook server listens on. Default "127.0.0.1".
	WebhookHost string
	// WebhookAdvertiseHost is the address the hub apiserver reaches the webhook
	// server at (and the serving certificate's name). Default WebhookHost.
	WebhookAdvertiseHost string
	// WebhookPort is the webhook server's port. Default 0: a free port is picked.
	WebhookPort int
	// WebhookCertDir holds tls.crt and tls.key for the webhook server, and
	// optionally ca.crt (else tls.crt is the CA bundle given to the apiserver).
	// Default "": a self-signed certificate is generated at start.
	WebhookCertDir string
	// WebhookService ("namespace/name") makes the apiserver call the webhooks
	// through that Service (port 443) instead of a URL: for a hub running as
	// Pods behind it (`flotilla init --deploy`). The serving certificate must name
	// <name>.<namespace>.svc; every replica must serve the same one
	// (WebhookCertDir). Default "": a URL at WebhookAdvertiseHost.
	WebhookService string
	// MetricsAddr serves Prometheus metrics. Default "0" (off).
	MetricsAddr string
	// HealthAddr serves /healthz and /readyz. Default "" (off).
	HealthAddr string
	// PprofAddr serves Go's profiles (net/http/pprof) there; empty = off.
	PprofAddr string
	// LeaderElection makes replicas elect one active hub. Default false.
	LeaderElection bool
	// QPS and Burst limit the hub's requests to its apiserver. Default 100 and 200
	// (client-go's 5/10, or controller-runtime's 20/30, make 50 clusters joining at
	// once wait half a minute on the client side).
	QPS   float32
	Burst int
	// RemoveWebhooksOnStop removes the webhook configuration on a clean stop (if
	// it still points at this process), letting writes through unchecked while no
	// hub runs. Default false: a stopped hub keeps guarding spec.hubAcceptsClient.
	RemoveWebhooksOnStop bool
	// Addons are the addons the hub manages. Default: the shipped ones
	// (addons.ShippedWith(AddonImage)).
	Addons *framework.Registry
	// AddonImage is the image the shipped addons' agent Deployments run (their
	// ManifestWorks deliver it to the managed clusters). Default: the shipped
	// addons' own default, ghcr.io/flotilla-dev/flotilla:latest.
	AddonImage string
	// ComplianceDB is where the compliance history is recorded: a SQLite file
	// path, or a postgres:// URL. Default "": no history is recorded (the
	// `flotilla hub` command defaults it to compliance.db in its --data-dir).
	// The live report is served at /compliance and /api/compliance on the
	// webhook server's HTTPS port either way.
	ComplianceDB string
	// SearchDB is the fleet search index: a SQLite file path, or a
	// postgres:// URL. Default "": no index, the search API is not served
	// (the `flotilla hub` command defaults it to search.db in its
	// --data-dir).
	SearchDB string
	// SearchLimits bound what one cluster may keep in the search index.
	// Default zero: no limit (the `flotilla hub` command defaults it to
	// index.DefaultLimits).
	SearchLimits index.Limits
	// APIAddress is the IP of this host the aggregated API
	// (compliance.flotilla.dev, internal/aggregated) is served and advertised at,
	// as the one endpoint of Service APIServiceNamespace/APIServiceName: not
	// loopback (EndpointSlices refuse it). Default "": with WebhookService the
	// API is served on every address at APIPort behind that Service (the
	// Pods'), else it is not served.
	APIAddress string
	// APIPort is the aggregated API's port. Default 0: a free port, or with
	// WebhookService DefaultAPIPort (the Service's port and the Pods').
	APIPort int
	// ComplianceRetention keeps compliance events this long (the newest of
	// each series is always kept). Default 0: forever.
	ComplianceRetention time.Duration
	// Ready, when set, is called once the webhooks are registered and the
	// controllers are running (the first time only).
	Ready func()
	// APIServerCheckInterval is the pause between two tries to read the
	// apiservers' identity leases, which the hub follows to notice that its
	// apiserver restarted, after which it lists every cache afresh. Default
	// 5 s; negative: the hub does not follow them.
	APIServerCheckInterval time.Duration
}

// Run runs the hub until ctx ends. Its webhook configuration stays registered
// after it stops (failurePolicy Fail): while no hub runs, nobody can accept a
// cluster by editing it directly. Options.RemoveWebhooksOnStop changes that.
func Run(ctx context.Context, opts Options) error {
	if opts.Config == nil {
		return errors.New("hub: Options.Config is required")
	}
	if opts.WebhookHost == "" {
		opts.WebhookHost = "127.0.0.1"
	}
	if opts.WebhookAdvertiseHost == "" {
		opts.WebhookAdvertiseHost = opts.WebhookHost
	}
	if opts.MetricsAddr == "" {
		opts.MetricsAddr = "0"
	}
	if opts.WebhookPort == 0 {
		port, err := freePort(opts.WebhookHost)
		if err != nil {
			return err
		}
		opts.WebhookPort = port
	}
	certHost := opts.WebhookAdvertiseHost
	var svcNS, svcName string
	if opts.WebhookService != "" {
		var ok bool
		svcNS, svcName, ok = strings.Cut(opts.WebhookService, "/")
		if !ok || svcNS == "" || svcName == "" {
			return fmt.Errorf("hub: webhook service %q is not namespace/name", opts.WebhookService)
		}
		certHost = svcName + "." + svcNS + ".svc"
	}
	certDir, caBundle, cleanup, err := webhookCerts(opts.WebhookCertDir, certHost)
	if err != nil {
		return err
	}
	defer cleanup()
	api, cleanupAPI, err := aggregatedAPI(opts, certDir, caBundle, svcNS, svcName)
	if err != nil {
		return err
	}
	defer cleanupAPI()
	opts.APIPort = api.port
	if opts.Ready != nil {
		opts.Ready = sync.OnceFunc(opts.Ready) // the first start only
	}
	if opts.APIServerCheckInterval == 0 {
		opts.APIServerCheckInterval = defaultAPIServerCheckInterval
	}
	// The controllers run until ctx ends, and start again, with caches listed
	// afresh, each time the hub apiserver restarts (apiserverrestart.go).
	log := ctrl.Log.WithName("hub")
	known := &identities{}
	// Pauses before starting again after a failed start: 5 s, doubling to a minute.
	newPauses := func() wait.Backoff {
		return wait.Backoff{Duration: 5 * time.Second, Factor: 2, Cap: time.Minute, Steps: math.MaxInt32}
	}
	pauses := newPauses()
	for starts := 0; ; starts++ {
		err := runControllers(ctx, opts, certDir, caBundle, svcNS, svcName, api, starts, known)
		if ctx.Err() != nil {
			return nil // stopped (SIGTERM), whatever the run was doing
		}
		var restarted *apiserverRestarted
		switch reason := known.takeRestart(); {
		case reason != "" && errors.As(err, &restarted):
			pauses = newPauses()
			cacheRestarts.Inc()
			log.Info("the hub apiserver restarted: starting the controllers again with caches listed afresh", "apiserver", reason)
			continue
		case reason != "":
			// The stop timed out or failed: reconcilers may still run. A second
			// manager beside them could act twice; a supervisor starts a new hub.
			return fmt.Errorf("the hub apiserver restarted and the controllers did not stop cleanly (%w): exiting so that the hub starts afresh", err)
		case starts > 0 && err != nil && unwaited(err):
			// The manager returned without waiting for its reconcilers (the
			// leader lease was lost) or gave up waiting: a second manager
			// beside them could act twice.
			return fmt.Errorf("the controllers stopped (%w): exiting so that the hub starts afresh", err)
		case starts > 0 && err != nil:
			// A later start failed (its apiserver may still be unsteady):
			// keep trying rather than leave no hub running.
			pause := pauses.Step()
			log.Error(err, "the controllers stopped; starting them again", "in", pause.String())
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(pause):
			}
		default:
			return err
		}
	}
}

// processManagers counts the hub managers this process made.
var processManagers atomic.Int32

// runControllers runs one manager (caches, controllers, webhooks) until ctx
// ends or the hub apiserver restarts (*apiserverRestarted).
func runControllers(hubCtx context.Context, opts Options, certDir string, caBundle []byte, svcNS, svcName string, api apiServing, starts int, known *identities) error {
	cfg := rest.CopyConfig(opts.Config)
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	if cfg.QPS <= 0 {
		cfg.QPS = 100
	}
	if cfg.Burst <= 0 {
		cfg.Burst = 200
	}
	// One undecodable object must not stop an informer: skip it, say so once.
	hubScheme := scheme.New()
	skip, err := tolerant.New(tolerant.Options{Scheme: hubScheme, Log: ctrl.Log.WithName("hub").WithName("undecodable")})
	if err != nil {
		return err
	}
	cfg = skip.Wrap(cfg)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 hubScheme,
		Metrics:                metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress: opts.HealthAddr,
		PprofBindAddress:       opts.PprofAddr,
		LeaderElection:         opts.LeaderElection,
		LeaderElectionID:       "flotilla-hub",
		WebhookServer:          newWebhookServer(opts.WebhookHost, opts.WebhookPort, certDir, 0),
		// controller-runtime v0.23's priority queue can hang the manager's
		// shutdown (kubernetes-sigs/controller-runtime#3538): use the plain
		// rate-limited queue until that is fixed.
		// A start after an apiserver restart, or a second hub in one process
		// (tests), registers the same controller names again.
		Controller: config.Controller{UsePriorityQueue: ptr.To(false), SkipNameValidation: ptr.To(processManagers.Add(1) > 1)},
		// A restart of the controllers releases the lease at once, once
		// every runnable has stopped.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(gracefulStop),
		Cache:                         cacheOptions(),
	})
	if err != nil {
		return fmt.Errorf("hub manager: %w", err)
	}
	skip.SetReporter(tolerant.EventReporter(mgr.GetEventRecorder("flotilla-hub")))
	if opts.HealthAddr != "" {
		// Ready once the webhook server serves: every replica serves the webhooks
		// (only the leader reconciles), and the apiserver calls ready ones only.
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return err
		}
	}
	// One client for every webhook that calls the apiserver, its limit apart
	// from the controllers' (admissionclient).
	admission, err := admissionclient.New(mgr)
	if err != nil {
		return err
	}
	regOpts := opts.Registration
	regOpts.Admission = admission
	if err := registration.Setup(mgr, regOpts); err != nil {
		return fmt.Errorf("registration: %w", err)
	}
	if err := placement.Setup(mgr, placement.Options{}); err != nil {
		return fmt.Errorf("placement: %w", err)
	}
	if err := work.Setup(mgr, work.Options{ManifestLimit: opts.ManifestLimit, NilExecutorValidating: opts.NilExecutorValidating, Admission: admission}); err != nil {
		return fmt.Errorf("work: %w", err)
	}
	if err := addons.Setup(mgr, addons.Options{Registry: opts.Addons, AgentImage: opts.AddonImage, ManifestLimit: opts.ManifestLimit}); err != nil {
		return fmt.Errorf("addons: %w", err)
	}
	if err := propagator.Setup(mgr, propagator.Options{}); err != nil {
		return fmt.Errorf("governance: %w", err)
	}
	base := "https://" + net.JoinHostPort(opts.WebhookAdvertiseHost, strconv.Itoa(opts.WebhookPort))
	complianceAPI, closeHistory, err := setupCompliance(hubCtx, mgr, cfg, opts, base, api)
	if err != nil {
		return err
	}
	defer closeHistory()
	searchAPI, closeIndex, err := setupSearch(hubCtx, mgr, cfg, opts, api)
	if err != nil {
		return err
	}
	defer closeIndex()
	if err := serveAPI(mgr, opts, api, append(complianceAPI, searchAPI...)); err != nil {
		return err
	}
	var hooks webhookSet
	hooks.validating = append(hooks.validating, registration.Webhooks()...)
	hooks.validating = append(hooks.validating, placement.Webhooks()...)
	hooks.validating = append(hooks.validating, work.Webhooks()...)
	hooks.mutating = append(hooks.mutating, registration.MutatingWebhooks()...)
	hooks.mutating = append(hooks.mutating, work.MutatingWebhooks()...)
	// addon.open-cluster-management.io v1beta1 beside the stored v1alpha1.
	mgr.GetWebhookServer().Register(addonconversion.Path, addonconversion.Handler{})
	conversion := conversionClientConfig(base, opts.WebhookService, caBundle)
	if opts.WebhookService != "" {
		base = "service:" + opts.WebhookService
		hooks = hooks.pointed(atService(svcNS, svcName, caBundle))
	} else {
		hooks = hooks.pointed(atBaseURL(base, caBundle))
	}

	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		served := func(ctx context.Context) error {
			if err := addonconversion.Configure(ctx, mgr.GetConfig(), conversion); err != nil {
				return fmt.Errorf("addon conversion webhook: %w", err)
			}
			return nil
		}
		// A restart of the controllers is no stop of the hub: the webhooks stay.
		remove := func() bool { return opts.RemoveWebhooksOnStop && hubCtx.Err() != nil }
		return registerWebhooks(ctx, mgr, hooks, base, served, opts.Ready, remove)
	})); err != nil {
		return err
	}
	if opts.APIServerCheckInterval > 0 {
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		if err := mgr.Add(&apiserverWatch{client: kube, interval: opts.APIServerCheckInterval, known: known,
			elected: mgr.Elected(), stagger: followerStagger, log: ctrl.Log.WithName("hub").WithName("apiserver-identity")}); err != nil {
			return err
		}
	}
	return mgr.Start(hubCtx)
}

// newWebhookServer is the hub's one HTTPS server: admission reviews, the addon
// conversion webhook and the live compliance report. Anyone who reaches the
// port may call it (the apiserver sends no client certificate), so every
// handler is bounded in body size and body time (internal/httplimit):
// admission reviews by the default (8 MiB), conversion reviews by
// addonconversion.MaxReviewBytes (a list of addons comes in one review), the
// compliance pages, which take no body but the login form's, by 64 KiB. A body
// must arrive within bodyTimeout (0: httplimit.DefaultBodyTimeout, 30 s).
func newWebhookServer(host string, port int, certDir string, bodyTimeout time.Duration) webhook.Server {
	small := httplimit.Limits{MaxBodyBytes: 64 << 10, BodyTimeout: bodyTimeout}
	return httplimit.Server{
		Server:  webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: certDir}),
		Default: httplimit.Limits{BodyTimeout: bodyTimeout},
		Paths: map[string]httplimit.Limits{
			addonconversion.Path: {MaxBodyBytes: addonconversion.MaxReviewBytes, BodyTimeout: bodyTimeout},
			web.PagePath:         small,
			web.APIPath:          small,
			web.LoginPath:        small,
		},
	}
}

func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("pick a webhook port on %s: %w", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// webhookCerts returns the directory with the serving certificate and the CA
// bundle for the apiserver, generating a self-signed pair when dir is "".
func webhookCerts(dir, host string) (certDir string, caBundle []byte, cleanup func(), err error) {
	if dir != "" {
		for _, name := range []string{"ca.crt", "tls.crt"} {
			if caBundle, err = os.ReadFile(filepath.Join(dir, name)); err == nil {
				return dir, caBundle, func() {}, nil
			}
		}
		return "", nil, nil, fmt.Errorf("webhook cert dir %s: no ca.crt or tls.crt: %w", dir, err)
	}
	tmp, err := os.MkdirTemp("", "flotilla-hub-webhook-")
	if err != nil {
		return "", nil, nil, err
	}
	caBundle, err = writeSelfSignedCert(tmp, host)
	if err != nil {
		os.RemoveAll(tmp)
		return "", nil, nil, fmt.Errorf("generate webhook serving certificate: %w", err)
	}
	return tmp, caBundle, func() { os.RemoveAll(tmp) }, nil
}

// cacheOptions keep the hub's informers lean at fleet size: no object keeps
// its managedFields (nothing on the hub reads them; an update without them
// leaves the apiserver's as they are); of the Leases only the clusters'
// heartbeats are watched, not every Lease of the hub cluster; of the
// Namespaces, ClusterRoles and ClusterRoleBindings only those the hub made for
// its clusters (rbac.Labelled), not every one of the hub cluster. The readers
// of those three through the cache (docs/benchmarks.md lists them) look for
// the hub's own objects; the two that must see any namespace (is a cluster's
// namespace someone else's?) and the shared ClusterRoles ask the apiserver.
// RoleBindings stay whole: an addon's permission binding has no cluster label.
// The Leases' selector is also what lets a deployed hub list and watch them:
// RBAC matches a list's metadata.name field selector against resourceNames,
// and manifests/hub lets the hub read Leases of that name only.
func cacheOptions() cache.Options {
	labelled := cache.ByObject{Label: rbac.Labelled()}
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&coordinationv1.Lease{}:      {Field: fields.OneTermEqualSelector("metadata.name", health.LeaseName)},
			&corev1.Namespace{}:          labelled,
			&rbacv1.ClusterRole{}:        labelled,
			&rbacv1.ClusterRoleBinding{}: labelled,
		},
	}
}
