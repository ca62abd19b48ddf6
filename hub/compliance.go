package hub

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"flotilla.dev/flotilla/policy/compliance/history"
	"flotilla.dev/flotilla/policy/compliance/history/recorder"
	"flotilla.dev/flotilla/policy/compliance/web"
)

// setupCompliance opens the history store (when ComplianceDB is set) and
// registers its recorder, and serves the live report on the webhook server.
// The returned func closes the store.
func setupCompliance(ctx context.Context, mgr manager.Manager, cfg *rest.Config, opts Options, base string) (func(), error) {
	var store history.Store
	closeStore := func() {}
	if opts.ComplianceDB != "" {
		var err error
		if store, err = history.Open(ctx, opts.ComplianceDB); err != nil {
			return nil, fmt.Errorf("compliance history: %w", err)
		}
		closeStore = func() { _ = store.Close() }
		if err := recorder.Setup(mgr, recorder.Options{Store: store, Retention: opts.ComplianceRetention}); err != nil {
			closeStore()
			return nil, fmt.Errorf("compliance recorder: %w", err)
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		closeStore()
		return nil, err
	}
	h, err := web.New(web.Options{Reader: mgr.GetClient(), Auth: web.NewAuthorizer(cs), History: store})
	if err != nil {
		closeStore()
		return nil, err
	}
	srv := mgr.GetWebhookServer()
	for _, path := range []string{web.PagePath, web.APIPath, web.LoginPath, web.LogoutPath} {
		srv.Register(path, h)
	}
	ctrl.Log.WithName("hub").Info("compliance report served", "url", base+web.PagePath, "api", base+web.APIPath, "history", redactedDB(opts.ComplianceDB))
	return closeStore, nil
}

func redactedDB(db string) string {
	if db == "" {
		return "off"
	}
	if history.IsPostgres(db) {
		return "postgres"
	}
	return db
}
