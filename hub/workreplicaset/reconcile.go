package workreplicaset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
	"flotilla.dev/flotilla/hub/workreplicaset/distribute"
	statusfit "flotilla.dev/flotilla/internal/conditions"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/placementread"
)

// Reconcile follows the skeleton: get, finalizer (deletion), gather the facts,
// plan (pure), execute the plan's writes, write the status if it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var mwrs workv1alpha1.ManifestWorkReplicaSet
	if err := r.Get(ctx, req.NamespacedName, &mwrs); err != nil {
		if apierrors.IsNotFound(err) {
			r.renders.forget(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	works, err := r.works(ctx, &mwrs)
	if err != nil {
		return ctrl.Result{}, err
	}
	if mwrs.DeletionTimestamp != nil {
		return r.finalize(ctx, &mwrs, works)
	}
	if controllerutil.AddFinalizer(&mwrs, workv1alpha1.ManifestWorkReplicaSetFinalizer) {
		if err := r.Update(ctx, &mwrs); err != nil {
			return ctrl.Result{}, err
		}
	}

	f := r.facts(ctx, &mwrs, works)
	p := plan(f)
	logPlan(ctx, p)
	errs := f.errs()
	errs = append(errs, r.execute(ctx, &mwrs, p)...)
	if err := r.writeStatus(ctx, &mwrs, p); err != nil {
		errs = append(errs, err)
	}
	if err := r.writePolicyStatus(ctx, &mwrs, f.Policy, p.PolicyStatus); err != nil {
		errs = append(errs, err)
	}
	return ctrl.Result{RequeueAfter: p.RequeueAfter}, errors.Join(errs...)
}

// facts reads what plan needs: for each placementRef its Placement's answer
// and, when that can be used, whether the hub accepted each cluster it
// decides. A read error is kept with its ref (the ref's works are kept) and
// returned by Facts.errs.
func (r *Reconciler) facts(ctx context.Context, mwrs *workv1alpha1.ManifestWorkReplicaSet, works []*workv1.ManifestWork) Facts {
	f := Facts{Generation: mwrs.Generation, Hash: TemplateHash(mwrs.Spec.ManifestWorkTemplate), Now: r.now(), Works: works,
		Namespace: mwrs.Namespace, Name: mwrs.Name, Template: mwrs.Spec.ManifestWorkTemplate,
		PolicyName: mwrs.Annotations[distv1alpha1.PolicyAnnotation], Renders: r.renders}
	if f.PolicyName != "" {
		f.Clusters = map[string]distribute.Cluster{}
		var p distv1alpha1.DistributionPolicy
		switch err := r.Get(ctx, types.NamespacedName{Namespace: mwrs.Namespace, Name: f.PolicyName}, &p); {
		case apierrors.IsNotFound(err):
		case err != nil:
			f.PolicyErr = fmt.Errorf("DistributionPolicy %q could not be read: %w", f.PolicyName, err)
		default:
			f.Policy = &p
		}
	}
	for _, ref := range mwrs.Spec.PlacementRefs {
		rf := RefFacts{Ref: ref}
		rf.Decisions, rf.ReadErr = placementread.Read(ctx, r.Client, mwrs.Namespace, ref.Name)
		if rf.ReadErr == nil && rf.Decisions.Found && rf.Decisions.Readiness != placementread.Unknown {
			rf.Accepted, rf.AcceptedErr = r.accepted(ctx, rf.Decisions.Own, f.Clusters)
		}
		f.Refs = append(f.Refs, rf)
	}
	return f
}

// errs are the read errors of the facts, returned so that the reconcile is
// retried with backoff.
func (f Facts) errs() []error {
	var errs []error
	for _, rf := range f.Refs {
		for _, err := range []error{rf.ReadErr, rf.AcceptedErr} {
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	if f.PolicyErr != nil {
		errs = append(errs, f.PolicyErr)
	}
	return errs
}

// logPlan logs what the plan holds back: held clusters, kept works.
func logPlan(ctx context.Context, p Plan) {
	logger := log.FromContext(ctx)
	for _, o := range p.Refs {
		if len(o.held) > 0 {
			logger.Info("decided clusters the hub has not accepted get no work written", "placement", o.name, "clusters", o.held)
		}
		if o.unknown != "" || o.inFlux {
			logger.V(btoi(o.inFlux)).Info("keeping the works of a placementRef whose decisions cannot be used", "placement", o.name,
				"why", o.unknown, "inFlux", o.inFlux, "kept", o.kept)
		}
	}
}

// execute makes the plan's writes: every Apply, then every Delete. It returns
// every error, not only the first.
func (r *Reconciler) execute(ctx context.Context, mwrs *workv1alpha1.ManifestWorkReplicaSet, p Plan) []error {
	var errs []error
	for _, a := range p.Apply {
		if err := r.applyWork(ctx, render(mwrs, a), a.Existing == nil); err != nil {
			errs = append(errs, err)
		}
	}
	for _, w := range p.Delete {
		if err := client.IgnoreNotFound(r.Delete(ctx, w)); err != nil {
			errs = append(errs, fmt.Errorf("delete ManifestWork %s/%s: %w", w.Namespace, w.Name, err))
		}
	}
	return errs
}

// writeStatus writes the plan's status, fitted to the CRD, when it changed.
// A conflict is no error: the replica set changed, and its event brings us back.
func (r *Reconciler) writeStatus(ctx context.Context, mwrs *workv1alpha1.ManifestWorkReplicaSet, p Plan) error {
	next := *mwrs
	next.Status = p.status(mwrs.Status.Conditions)
	statusfit.Fit(ctx, r.recorder, &next)
	if reflect.DeepEqual(next.Status, mwrs.Status) {
		return nil
	}
	if err := r.Status().Update(ctx, &next); err != nil && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// accepted reads, from the cache, whether the hub accepted each cluster the
// decisions list (ocm.Accepted); a cluster that does not exist is not. When
// clusters is not nil, it gains what a render knows of each accepted one.
func (r *Reconciler) accepted(ctx context.Context, decisions []clusterv1beta1.PlacementDecision, clusters map[string]distribute.Cluster) (map[string]bool, error) {
	out := map[string]bool{}
	for _, d := range decisions {
		for _, cd := range d.Status.Decisions {
			if _, done := out[cd.ClusterName]; done {
				continue
			}
			var mc clusterv1.ManagedCluster
			switch err := r.Get(ctx, types.NamespacedName{Name: cd.ClusterName}, &mc); {
			case apierrors.IsNotFound(err):
				out[cd.ClusterName] = false
			case err != nil:
				return nil, fmt.Errorf("get ManagedCluster %s: %w", cd.ClusterName, err)
			default:
				out[cd.ClusterName] = ocm.Accepted(&mc)
				if clusters != nil && out[cd.ClusterName] {
					clusters[cd.ClusterName] = ClusterFacts(&mc)
				}
			}
		}
	}
	return out, nil
}

// applyWork creates (create) or updates the cluster's work w (render's).
func (r *Reconciler) applyWork(ctx context.Context, w *workv1.ManifestWork, create bool) error {
	var err error
	if create {
		err = r.Create(ctx, w)
	} else {
		err = r.Update(ctx, w)
	}
	if err != nil {
		return fmt.Errorf("write ManifestWork %s/%s: %w", w.Namespace, w.Name, err)
	}
	log.FromContext(ctx).V(1).Info("rolled out", "cluster", w.Namespace, "hash", w.Annotations[TemplateHashAnnotation])
	return nil
}

// works lists the works generated for mwrs, in all cluster namespaces.
func (r *Reconciler) works(ctx context.Context, m *workv1alpha1.ManifestWorkReplicaSet) ([]*workv1.ManifestWork, error) {
	var list workv1.ManifestWorkList
	if err := r.List(ctx, &list, client.MatchingLabels{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: ownerKey(m)}); err != nil {
		return nil, err
	}
	out := make([]*workv1.ManifestWork, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// finalize deletes the generated works; Foreground keeps the finalizer until they are gone.
func (r *Reconciler) finalize(ctx context.Context, m *workv1alpha1.ManifestWorkReplicaSet, works []*workv1.ManifestWork) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(m, workv1alpha1.ManifestWorkReplicaSetFinalizer) {
		return ctrl.Result{}, nil
	}
	for _, w := range works {
		if w.DeletionTimestamp == nil {
			if err := client.IgnoreNotFound(r.Delete(ctx, w)); err != nil {
				return ctrl.Result{}, fmt.Errorf("delete ManifestWork %s/%s: %w", w.Namespace, w.Name, err)
			}
		}
	}
	if len(works) > 0 && m.Spec.CascadeDeletionPolicy != workv1alpha1.Background {
		return ctrl.Result{}, nil // the works' deletion events bring us back
	}
	if err := r.forgetInPolicy(ctx, m); err != nil {
		return ctrl.Result{}, err
	}
	controllerutil.RemoveFinalizer(m, workv1alpha1.ManifestWorkReplicaSetFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Update(ctx, m))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ClusterFacts is what a render knows of a managed cluster: name, labels,
// ClusterClaims and allocatable resources (capacity when it reports none).
func ClusterFacts(mc *clusterv1.ManagedCluster) distribute.Cluster {
	c := distribute.Cluster{Name: mc.Name, Labels: mc.Labels, Claims: map[string]string{}, Allocatable: corev1.ResourceList{}}
	for _, cl := range mc.Status.ClusterClaims {
		c.Claims[cl.Name] = cl.Value
	}
	alloc := mc.Status.Allocatable
	if len(alloc) == 0 {
		alloc = mc.Status.Capacity
	}
	for name, q := range alloc {
		c.Allocatable[corev1.ResourceName(name)] = q
	}
	return c
}

// writePolicyStatus writes the replica set's entry into its policy's status
// (status.replicaSets, by name) when it changed, retrying on conflict: several
// replica sets may share a policy.
func (r *Reconciler) writePolicyStatus(ctx context.Context, mwrs *workv1alpha1.ManifestWorkReplicaSet, read *distv1alpha1.DistributionPolicy, entry *distv1alpha1.ReplicaSetStatus) error {
	if read == nil || entry == nil {
		return nil
	}
	key := client.ObjectKeyFromObject(read)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p distv1alpha1.DistributionPolicy
		if err := r.Get(ctx, key, &p); err != nil {
			return err
		}
		next := p.Status.DeepCopy()
		next.OverrideCount = int64(len(p.Spec.Overrides))
		found := false
		for i := range next.ReplicaSets {
			if next.ReplicaSets[i].Name == entry.Name {
				next.ReplicaSets[i], found = *entry, true
			}
		}
		if !found {
			next.ReplicaSets = append(next.ReplicaSets, *entry)
			sort.Slice(next.ReplicaSets, func(i, j int) bool { return next.ReplicaSets[i].Name < next.ReplicaSets[j].Name })
		}
		if reflect.DeepEqual(*next, p.Status) {
			return nil
		}
		p.Status = *next
		return r.Status().Update(ctx, &p)
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("write DistributionPolicy %s status for %s: %w", key, mwrs.Name, err)
	}
	return nil
}

// forgetInPolicy removes the replica set's entry from the status of the
// DistributionPolicy it names (a policy that is gone has nothing to forget).
func (r *Reconciler) forgetInPolicy(ctx context.Context, m *workv1alpha1.ManifestWorkReplicaSet) error {
	name := m.Annotations[distv1alpha1.PolicyAnnotation]
	if name == "" {
		return nil
	}
	key := types.NamespacedName{Namespace: m.Namespace, Name: name}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p distv1alpha1.DistributionPolicy
		if err := r.Get(ctx, key, &p); err != nil {
			return err
		}
		kept := p.Status.ReplicaSets[:0:0]
		for _, e := range p.Status.ReplicaSets {
			if e.Name != m.Name {
				kept = append(kept, e)
			}
		}
		if len(kept) == len(p.Status.ReplicaSets) {
			return nil
		}
		p.Status.ReplicaSets = kept
		return r.Status().Update(ctx, &p)
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove %s from DistributionPolicy %s status: %w", m.Name, key, err)
	}
	return nil
}
