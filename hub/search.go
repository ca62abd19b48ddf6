package hub

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"flotilla.dev/flotilla/internal/aggregated"
	"flotilla.dev/flotilla/search/apigroup"
	"flotilla.dev/flotilla/search/cleanup"
	"flotilla.dev/flotilla/search/index"
)

// setupSearch opens the search index (when SearchDB is set), registers its
// cleanup, and returns the search API's group for the aggregated server
// (when api is on) and a func that closes the index.
func setupSearch(ctx context.Context, mgr manager.Manager, cfg *rest.Config, opts Options, api apiServing) ([]aggregated.Group, func(), error) {
	if opts.SearchDB == "" {
		return nil, func() {}, nil
	}
	idx, err := index.Open(ctx, opts.SearchDB)
	if err != nil {
		return nil, nil, fmt.Errorf("search index: %w", err)
	}
	idx.SetLimits(opts.SearchLimits)
	closeIndex := func() { _ = idx.Close() }
	if err := cleanup.Setup(mgr, idx); err != nil {
		closeIndex()
		return nil, nil, fmt.Errorf("search cleanup: %w", err)
	}
	var groups []aggregated.Group
	if api.on() {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			closeIndex()
			return nil, nil, err
		}
		group, err := apigroup.New(apigroup.Options{Index: idx, Reader: mgr.GetClient(), Access: apigroup.NewAccess(cs)})
		if err != nil {
			closeIndex()
			return nil, nil, err
		}
		groups = append(groups, group)
	}
	ctrl.Log.WithName("hub").Info("fleet search served", "api", api.on(), "index", redactedDB(opts.SearchDB),
		"maxObjectsPerCluster", opts.SearchLimits.Objects, "maxBytesPerCluster", opts.SearchLimits.Bytes)
	return groups, closeIndex, nil
}
