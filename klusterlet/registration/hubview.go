package registration

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	addoninformers "open-cluster-management.io/api/client/addon/informers/externalversions"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/internal/tolerant"
	"flotilla.dev/flotilla/internal/watchguard"
)

// The hub view: what a joined agent reads on the hub, from two watches and
// no polling. Its own ManagedCluster (one object, a field selector on its
// name) is what the status rounds start from and what the klusterlet's
// delivery gate follows (FollowOwnCluster); the ManagedClusterAddOns of its
// cluster namespace are what the addon rounds go through. A change the agent
// must answer starts its round at once: the hub marking the cluster
// Available Unknown, a new lease duration, an addon added or changed.
//
// Before, every status round read the ManagedCluster (a GET every 10 s by
// default) and every addon round listed the addons (every 5 s), on every
// cluster: at 5,000 clusters, 1,500 hub requests a second at the defaults,
// where upstream's agents watch. The watches are guarded by one
// watchguard.Tracker on the hub connection (no watch of its own).

// hubView holds the latest of both; the zero value knows nothing yet.
type hubView struct {
	// notify orders the calls of followers: one at a time, in the order of
	// the changes.
	notify sync.Mutex
	mu     sync.Mutex
	// cluster is the ManagedCluster as last seen (nil: none); clusterKnown
	// says the watch has listed.
	cluster      *clusterv1.ManagedCluster
	clusterKnown bool
	addons       cache.Store // nil until the addon watch has listed
	followers    []func(*clusterv1.ManagedCluster)
	// through is the hub transport the watches go through: a view of
	// another transport (the agent bootstrapped against a rebuilt hub) is
	// not this hub's.
	through *hubTransport
}

// FollowOwnCluster calls f with the cluster's ManagedCluster on the hub on
// every change once the agent has joined, nil while there is none (not
// created yet, deleted, or not decodable). Calls come one at a time, in the
// order of the changes, on the watch's goroutine, and must not block; the
// first comes at once, on the caller's goroutine, with what is known, if
// anything. f must not call FollowOwnCluster.
func (a *Agent) FollowOwnCluster(f func(*clusterv1.ManagedCluster)) {
	v := &a.view
	v.notify.Lock()
	defer v.notify.Unlock()
	v.mu.Lock()
	v.followers = append(v.followers, f)
	mc, known := v.cluster, v.clusterKnown
	v.mu.Unlock()
	if known {
		f(mc)
	}
}

// ownCluster is the ManagedCluster as last seen through transport t, and
// whether the watch has listed and serves now. The object is the cache's:
// read it, copy it to change it.
func (v *hubView) ownCluster(t *hubTransport) (*clusterv1.ManagedCluster, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.through != t || !v.clusterKnown {
		return nil, false
	}
	return v.cluster, true
}

// forget: what the view holds may no longer be the hub's (its run ended, or
// the hub refuses the watch: 403 or 404, as for a cluster the hub deleted).
// Readers fall back to reading the hub, whose answer tells them; followers
// are not told (nothing new is known).
func (v *hubView) forget() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clusterKnown, v.addons = false, nil
}

func (v *hubView) setCluster(mc *clusterv1.ManagedCluster) {
	v.notify.Lock()
	defer v.notify.Unlock()
	v.mu.Lock()
	v.cluster, v.clusterKnown = mc, true
	followers := append([]func(*clusterv1.ManagedCluster){}, v.followers...)
	v.mu.Unlock()
	for _, f := range followers {
		f(mc)
	}
}

// addonList is the cluster's ManagedClusterAddOns, and whether the watch has
// listed them. The objects are the cache's.
func (v *hubView) addonList() ([]*addonv1alpha1.ManagedClusterAddOn, bool) {
	v.mu.Lock()
	store := v.addons
	v.mu.Unlock()
	if store == nil {
		return nil, false
	}
	var out []*addonv1alpha1.ManagedClusterAddOn
	for _, o := range store.List() {
		if mca, ok := o.(*addonv1alpha1.ManagedClusterAddOn); ok {
			out = append(out, mca)
		}
	}
	return out, true
}

func (v *hubView) setAddons(s cache.Store) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.addons = s
}

// transport is the hub transport the agent's clients go through now.
func (a *Agent) transport() *hubTransport {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hub
}

// kick asks for a round now; one request waits, more are one.
func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// runHubView follows the hub view once the agent has joined, until ctx ends;
// a cut or silent watch lists both afresh.
func (a *Agent) runHubView(ctx context.Context) {
	cfg, _, err := a.WaitJoined(ctx)
	if err != nil {
		return
	}
	a.view.mu.Lock()
	a.view.through = a.transport()
	a.view.mu.Unlock()
	guard, tracked := watchguard.NewTracker("hub", cfg, 0)
	log := a.log.WithName("hub-view")
	if err := watchguard.Run(ctx, log, []watchguard.Sign{guard}, func(ctx context.Context) error {
		return a.watchHub(ctx, tracked, log)
	}); err != nil {
		log.Error(err, "watch the cluster's ManagedCluster and addons on the hub")
	}
}

// watchHub runs both informers until ctx ends.
func (a *Agent) watchHub(ctx context.Context, cfg *rest.Config, log logr.Logger) error {
	cluster := a.opts.ClusterName
	// A ManagedCluster that cannot be decoded must not stall the watch: it
	// reads as gone (the gate delivers nothing), logged once. The addons are
	// read as they are: the addon round removes the credentials of addons
	// it does not find, so an addon the filter hid would lose its
	// credential; an undecodable one stalls the addon watch, and the rounds
	// list (and fail) as before it.
	sch := runtime.NewScheme()
	if err := clusterv1.Install(sch); err != nil {
		return err
	}
	skip, err := tolerant.New(tolerant.Options{Scheme: sch, Log: log.WithName("undecodable")})
	if err != nil {
		return err
	}
	cs, err := clusterclient.NewForConfig(skip.Wrap(cfg))
	if err != nil {
		return err
	}
	ac, err := addonclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	clusters := clusterinformers.NewSharedInformerFactoryWithOptions(cs, 0,
		clusterinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + cluster }))
	addons := addoninformers.NewSharedInformerFactoryWithOptions(ac, 0, addoninformers.WithNamespace(cluster))
	mcInf := clusters.Cluster().V1().ManagedClusters().Informer()
	mcaInf := addons.Addon().V1alpha1().ManagedClusterAddOns().Informer()

	onCluster := func(obj any) {
		mc, ok := obj.(*clusterv1.ManagedCluster)
		if !ok || mc.Name != cluster {
			return
		}
		a.view.setCluster(mc)
		if a.mustAnswer(mc) {
			kick(a.statusKick)
		}
	}
	if _, err := mcInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onCluster,
		UpdateFunc: func(_, obj any) { onCluster(obj) },
		DeleteFunc: func(any) { a.view.setCluster(nil) },
	}); err != nil {
		return err
	}
	onAddon := func(any) { kick(a.addonKick) }
	if _, err := mcaInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onAddon, UpdateFunc: func(_, n any) { onAddon(n) }, DeleteFunc: onAddon,
	}); err != nil {
		return err
	}
	for _, inf := range []cache.SharedIndexInformer{mcInf, mcaInf} {
		_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
			log.V(1).Info("watching the hub", "error", err.Error())
			if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
				a.view.forget()
			}
		})
	}
	clusters.Start(ctx.Done())
	addons.Start(ctx.Done())
	defer clusters.Shutdown()
	defer addons.Shutdown()
	// A start that finds no ManagedCluster (deleted while the watch was
	// down: the first list fires no event for what is not there) says so.
	if cache.WaitForCacheSync(ctx.Done(), mcInf.HasSynced) {
		if _, exists, err := mcInf.GetStore().GetByKey(cluster); err == nil && !exists {
			a.view.setCluster(nil)
		}
	}
	if cache.WaitForCacheSync(ctx.Done(), mcaInf.HasSynced) {
		a.view.setAddons(mcaInf.GetStore())
		kick(a.addonKick)
	}
	<-ctx.Done()
	a.view.forget() // the next run's informers list afresh
	return nil
}

// reported is what the agent last wrote of its cluster's status, to tell a
// change of the hub's it must answer from the echo of its own write.
type reported struct {
	available metav1.ConditionStatus
	lease     int32 // the lease duration it renews at, in seconds
}

// mustAnswer: the ManagedCluster says something the agent's status round
// answers (the hub marked it Unknown, Joined is missing, the lease duration
// changed), unlike what the agent last reported.
func (a *Agent) mustAnswer(mc *clusterv1.ManagedCluster) bool {
	a.reportMu.Lock()
	r := a.reported
	a.reportMu.Unlock()
	return answerNeeded(mc, r)
}

// answerNeeded is mustAnswer's decision.
func answerNeeded(mc *clusterv1.ManagedCluster, r reported) bool {
	if !meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) {
		return true
	}
	c := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
	if c == nil || c.Status != r.available {
		return true
	}
	return mc.Spec.LeaseDurationSeconds > 0 && mc.Spec.LeaseDurationSeconds != r.lease
}
