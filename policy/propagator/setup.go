package propagator

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/events"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/policy/policyset"
)

// Options configures the propagator. Every field documents its default.
type Options struct {
	// Workers is how many root policies are reconciled concurrently. Default 4.
	Workers int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Reconciler propagates root policies to their clusters.
type Reconciler struct {
	client.Client
	recorder events.EventRecorder
	now      func() time.Time
	metrics  *Metrics
	reported sync.Map // root key -> the problems last reported as events
	// apiReader reads hub template objects (Secrets, ConfigMaps, lookups)
	// uncached.
	apiReader client.Reader
	refs      templateRefs
	// secrets watches the Secrets of the namespaces hub templates read them
	// from (where the hub may).
	secrets *secretWatches
}

// rootIndex indexes Policies by their root-policy label, so a root finds its
// replicas in every namespace without a scan.
const rootIndex = "policy.flotilla.dev/root-policy"

// Setup registers the propagator and the PolicySet status controller with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &policyv1.Policy{}, rootIndex, func(o client.Object) []string {
		if v, ok := o.GetLabels()[policyv1.RootPolicyLabel]; ok {
			return []string{v}
		}
		return nil
	}); err != nil {
		return err
	}
	meta, err := metadata.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	metrics := DefaultMetrics()
	metrics.reset()
	r := &Reconciler{Client: mgr.GetClient(), apiReader: mgr.GetAPIReader(), recorder: mgr.GetEventRecorder("policy-propagator"),
		now: opts.Now, metrics: metrics, secrets: newSecretWatches(meta)}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.secrets.Stop()
		return nil
	})); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("policy-propagator").
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Workers}).
		Watches(&policyv1.Policy{}, handler.EnqueueRequestsFromMapFunc(rootOf)).
		Watches(&policyv1.PlacementBinding{}, handler.EnqueueRequestsFromMapFunc(r.subjectsOf)).
		Watches(&policyv1beta1.PolicySet{}, handler.EnqueueRequestsFromMapFunc(membersOf)).
		Watches(&clusterv1beta1.Placement{}, handler.EnqueueRequestsFromMapFunc(r.boundToPlacement)).
		Watches(&clusterv1beta1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(r.boundToPlacement)).
		// Objects hub templates read: ConfigMaps (by metadata only),
		// ManagedClusters, and Secrets of the namespaces templates read them
		// from (secretWatches, by metadata only).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.refs.readers("ConfigMap")), builder.OnlyMetadata).
		WatchesRawSource(source.Channel(r.secrets.events, handler.EnqueueRequestsFromMapFunc(r.refs.readers("Secret")))).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.refs.readers("ManagedCluster")),
			builder.WithPredicates(templateInputsChanged)).
		// A decided cluster the hub accepts (or denies) gets (or loses) its
		// replicas even when no decision changes.
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.decidingOn),
			builder.WithPredicates(acceptanceChanged)).
		Complete(r); err != nil {
		return err
	}
	return policyset.Setup(mgr, policyset.Options{})
}

// templateInputsChanged passes ManagedCluster events that can change a hub
// template's result (labels, claims), not the frequent condition updates.
var templateInputsChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	old, okOld := e.ObjectOld.(*clusterv1.ManagedCluster)
	cur, okNew := e.ObjectNew.(*clusterv1.ManagedCluster)
	if !okOld || !okNew {
		return true
	}
	return !equality.Semantic.DeepEqual(old.Labels, cur.Labels) || !equality.Semantic.DeepEqual(old.Status.ClusterClaims, cur.Status.ClusterClaims)
}}

// acceptanceChanged passes ManagedCluster updates that change whether the hub
// accepted the cluster (ocm.Accepted).
var acceptanceChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc:  func(e event.UpdateEvent) bool { return ocm.AcceptanceChanged(e.ObjectOld, e.ObjectNew) },
}

// decidingOn maps a ManagedCluster to the policies bound to the placements
// that decide it.
func (r *Reconciler) decidingOn(ctx context.Context, o client.Object) []reconcile.Request {
	var list clusterv1beta1.PlacementDecisionList
	if err := r.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		d := &list.Items[i]
		for _, cd := range d.Status.Decisions {
			if cd.ClusterName == o.GetName() {
				out = append(out, r.boundToPlacement(ctx, d)...)
				break
			}
		}
	}
	return out
}

// rootOf maps a Policy to its root: a replica to the root its label names, a
// root to itself.
func rootOf(_ context.Context, o client.Object) []reconcile.Request {
	v, ok := o.GetLabels()[policyv1.RootPolicyLabel]
	if !ok {
		return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	}
	ns, name, ok := splitRootKey(v)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}}
}

// splitRootKey splits "<namespace>.<name>": namespaces hold no dots.
func splitRootKey(v string) (ns, name string, ok bool) {
	for i := 0; i < len(v); i++ {
		if v[i] == '.' {
			return v[:i], v[i+1:], i > 0 && i < len(v)-1
		}
	}
	return "", "", false
}

// membersOf maps a PolicySet to its policies.
func membersOf(_ context.Context, o client.Object) []reconcile.Request {
	s, ok := o.(*policyv1beta1.PolicySet)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	for _, p := range s.Spec.Policies {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: s.Namespace, Name: string(p)}})
	}
	return out
}

// subjectsOf maps a PlacementBinding to the policies it binds, directly or
// through PolicySets. Update events map both the old and the new binding, so a
// policy dropped from the subjects is reconciled too.
func (r *Reconciler) subjectsOf(ctx context.Context, o client.Object) []reconcile.Request {
	b, ok := o.(*policyv1.PlacementBinding)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	for _, s := range b.Subjects {
		switch s.Kind {
		case "Policy":
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: b.Namespace, Name: s.Name}})
		case "PolicySet":
			var set policyv1beta1.PolicySet
			if err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: s.Name}, &set); err == nil {
				out = append(out, membersOf(ctx, &set)...)
			}
		}
	}
	return out
}

// boundToPlacement maps a Placement or PlacementDecision to the policies bound
// to that placement.
func (r *Reconciler) boundToPlacement(ctx context.Context, o client.Object) []reconcile.Request {
	placement := o.GetName()
	if _, isDecision := o.(*clusterv1beta1.PlacementDecision); isDecision {
		placement = o.GetLabels()[clusterv1beta1.PlacementLabel]
	}
	var list policyv1.PlacementBindingList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if list.Items[i].PlacementRef.Name == placement {
			out = append(out, r.subjectsOf(ctx, &list.Items[i])...)
		}
	}
	return out
}
