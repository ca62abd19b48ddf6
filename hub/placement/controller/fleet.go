package controller

import (
	"context"
	"sync"
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub/placement/scheduling"
	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
)

// fleet is the part of a snapshot every placement shares: the clusters (with
// their addon scores, as ClusterInfos), the cluster sets and the sets'
// members. Listing and deriving them costs about as much as deciding one
// placement; a burst of placements on an unchanged fleet derives them once.
// Changes are counted, and a pass rebuilds the fleet when the count moved
// since the last build. Two kinds of handlers count:
//   - the controller's own handlers of the three kinds count before they
//     enqueue anything: a pass an event starts always sees it (informers
//     notify their handlers concurrently, so a counter of its own could run
//     after the pass);
//   - a handler of their own on the informers counts every other event too
//     (a change the controller's predicates drop: a CEL selector may read any
//     field), as soon as it runs, as a pass reading the cache would see it.
type fleet struct {
	// changes counts informer events of the three kinds.
	changes atomic.Uint64
	// watching is set once the handlers are registered; without them every
	// pass rebuilds.
	watching atomic.Bool

	mu       sync.Mutex
	built    bool
	at       uint64 // changes when the fleet was last listed
	clusters []*framework.ClusterInfo
	sets     []*clusterv1beta2.ManagedClusterSet
	members  map[string][]int
}

// changed counts a change of a cluster, score or set.
func (f *fleet) changed() { f.changes.Add(1) }

// watch registers the change counters on the cache's informers (created if
// need be; the cache need not be started).
func (f *fleet) watch(ctx context.Context, c cache.Informers) error {
	count := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { f.changed() },
		UpdateFunc: func(any, any) { f.changed() },
		DeleteFunc: func(any) { f.changed() },
	}
	for _, obj := range []client.Object{&clusterv1.ManagedCluster{}, &clusterv1alpha1.AddOnPlacementScore{}, &clusterv1beta2.ManagedClusterSet{}} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(count); err != nil {
			return err
		}
	}
	f.watching.Store(true)
	return nil
}

// get returns the fleet as the cache holds it now, listing it again only
// after a change. What it returns is shared by concurrent passes: read only.
func (f *fleet) get(ctx context.Context, r client.Reader, infos *infoCache) ([]*framework.ClusterInfo, []*clusterv1beta2.ManagedClusterSet, map[string][]int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Read the count before listing: a change the lists miss moves it again
	// (handlers run after their informer's store holds the change).
	now := f.changes.Load()
	if f.built && f.at == now && f.watching.Load() {
		return f.clusters, f.sets, f.members, nil
	}
	noCopy := client.UnsafeDisableDeepCopy
	var clusters clusterv1.ManagedClusterList
	if err := r.List(ctx, &clusters, noCopy); err != nil {
		return nil, nil, nil, err
	}
	var scores clusterv1alpha1.AddOnPlacementScoreList
	if err := r.List(ctx, &scores, noCopy); err != nil {
		return nil, nil, nil, err
	}
	var sets clusterv1beta2.ManagedClusterSetList
	if err := r.List(ctx, &sets, noCopy); err != nil {
		return nil, nil, nil, err
	}
	f.clusters = infos.get(clusters.Items, scores.Items)
	f.sets = make([]*clusterv1beta2.ManagedClusterSet, 0, len(sets.Items))
	for i := range sets.Items {
		f.sets = append(f.sets, &sets.Items[i])
	}
	f.members = scheduling.SetMembers(f.clusters, f.sets)
	f.at, f.built = now, true
	return f.clusters, f.sets, f.members, nil
}
