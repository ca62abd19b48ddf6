package hub

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"flotilla.dev/flotilla/internal/aggregated"
	"flotilla.dev/flotilla/internal/dburl"
	"flotilla.dev/flotilla/policy/compliance/apigroup"
	"flotilla.dev/flotilla/policy/compliance/history"
	"flotilla.dev/flotilla/policy/compliance/history/recorder"
	"flotilla.dev/flotilla/policy/compliance/web"
)

// setupCompliance opens the history store (when ComplianceDB is set) and
// registers its recorder, and serves the live report on the webhook server.
// It returns the compliance API's group for the aggregated server (when api
// is on) and a func that closes the store.
func setupCompliance(ctx context.Context, mgr manager.Manager, cfg *rest.Config, opts Options, base string, api apiServing) ([]aggregated.Group, func(), error) {
	var store history.Store
	closeStore := func() {}
	if opts.ComplianceDB != "" {
		var err error
		if store, err = history.Open(ctx, opts.ComplianceDB); err != nil {
			return nil, nil, fmt.Errorf("compliance history: %w", err)
		}
		closeStore = func() { _ = store.Close() }
		if err := recorder.Setup(mgr, recorder.Options{Store: store, Retention: opts.ComplianceRetention}); err != nil {
			closeStore()
			return nil, nil, fmt.Errorf("compliance recorder: %w", err)
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		closeStore()
		return nil, nil, err
	}
	auth := web.NewAuthorizer(cs)
	h, err := web.New(web.Options{Reader: mgr.GetClient(), Auth: auth, History: store})
	if err != nil {
		closeStore()
		return nil, nil, err
	}
	srv := mgr.GetWebhookServer()
	for _, path := range []string{web.PagePath, web.APIPath, web.LoginPath, web.LogoutPath} {
		srv.Register(path, h)
	}
	var groups []aggregated.Group
	if api.on() {
		group, err := apigroup.New(apigroup.Options{Reader: mgr.GetClient(), Access: auth, History: store})
		if err != nil {
			closeStore()
			return nil, nil, err
		}
		groups = append(groups, group)
	}
	ctrl.Log.WithName("hub").Info("compliance report served", "url", base+web.PagePath, "api", base+web.APIPath, "history", redactedDB(opts.ComplianceDB))
	return groups, closeStore, nil
}

// serveAPI serves groups as the hub's aggregated API (nothing when api is
// off or there is no group).
func serveAPI(mgr manager.Manager, opts Options, api apiServing, groups []aggregated.Group) error {
	if !api.on() || len(groups) == 0 {
		return nil
	}
	// The API's port uses the hub's own (unwrapped) config: it reads one
	// ConfigMap and writes its registration.
	srv, err := aggregated.New(aggregated.Options{Config: opts.Config, Groups: groups, BindAddress: api.bind,
		CertFile: api.certFile, KeyFile: api.keyFile, CABundle: api.caBundle, Service: api.service, ServicePort: int32(api.port),
		Endpoint: api.endpoint, RemoveOnStop: api.removeOnStop, Log: ctrl.Log.WithName("hub").WithName("aggregated-api")})
	if err != nil {
		return err
	}
	return mgr.Add(srv)
}

func redactedDB(db string) string {
	if db == "" {
		return "off"
	}
	if dburl.IsPostgres(db) {
		return "postgres"
	}
	return db
}
