// Package cleanup removes from the search index the objects of a cluster
// that no longer syncs: its ManagedCluster is gone (or being deleted), or
// its search addon (ManagedClusterAddOn "search" in its namespace) is.
// It reconciles one cluster name at a time, from the events of both kinds,
// and once at start for every cluster the index holds.
package cleanup

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/search/index"
)

// Index is what the cleanup needs of the index.
type Index interface {
	Clusters(ctx context.Context) ([]string, error)
	DeleteCluster(ctx context.Context, cluster string) error
}

// Reconciler removes a cluster's objects when it no longer syncs.
type Reconciler struct {
	Client client.Reader
	Index  Index
}

var _ reconcile.Reconciler = &Reconciler{}

// Syncing reports whether cluster still syncs: its ManagedCluster exists
// and is not being deleted, and so is its search ManagedClusterAddOn.
func Syncing(mc *clusterv1.ManagedCluster, mca *addonv1alpha1.ManagedClusterAddOn) bool {
	return mc != nil && mc.DeletionTimestamp == nil && mca != nil && mca.DeletionTimestamp == nil
}

// Reconcile looks at the cluster req.Name.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	name := req.Name
	var mc clusterv1.ManagedCluster
	var mcp *clusterv1.ManagedCluster
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, &mc); err == nil {
		mcp = &mc
	} else if !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	var mca addonv1alpha1.ManagedClusterAddOn
	var mcap *addonv1alpha1.ManagedClusterAddOn
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: name, Name: ocm.SearchAddon}, &mca); err == nil {
		mcap = &mca
	} else if !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	if Syncing(mcp, mcap) {
		return reconcile.Result{}, nil
	}
	if err := r.Index.DeleteCluster(ctx, name); err != nil {
		return reconcile.Result{}, fmt.Errorf("remove cluster %s from the search index: %w", name, err)
	}
	return reconcile.Result{}, nil
}

// Setup registers the reconciler with mgr, and a pass over the index's
// clusters once the caches are ready.
func Setup(mgr manager.Manager, idx *index.Store) error {
	r := &Reconciler{Client: mgr.GetClient(), Index: idx}
	initial := make(chan event.GenericEvent)
	toCluster := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		name := o.GetName()
		if _, isAddon := o.(*addonv1alpha1.ManagedClusterAddOn); isAddon {
			if name != ocm.SearchAddon {
				return nil
			}
			name = o.GetNamespace()
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("search-cleanup").
		WatchesRawSource(source.Channel(initial, toCluster)).
		Watches(&clusterv1.ManagedCluster{}, toCluster).
		Watches(&addonv1alpha1.ManagedClusterAddOn{}, toCluster).
		Complete(r); err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return nil
		}
		names, err := idx.Clusters(ctx)
		if err != nil {
			return fmt.Errorf("search cleanup: %w", err)
		}
		for _, n := range names {
			c := &clusterv1.ManagedCluster{}
			c.Name = n
			select {
			case initial <- event.GenericEvent{Object: c}:
			case <-ctx.Done():
				return nil
			}
		}
		<-ctx.Done()
		return nil
	}))
}
