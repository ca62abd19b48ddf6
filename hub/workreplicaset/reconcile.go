package workreplicaset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"flotilla.dev/flotilla/hub/workreplicaset/rollout"
	statusfit "flotilla.dev/flotilla/internal/conditions"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/placementread"
)

// Reconcile follows the skeleton: get, finalizer (deletion), compute, write status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var mwrs workv1alpha1.ManifestWorkReplicaSet
	if err := r.Get(ctx, req.NamespacedName, &mwrs); err != nil {
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

	hash := TemplateHash(mwrs.Spec.ManifestWorkTemplate)
	now := r.now()
	byCluster := map[string]*workv1.ManifestWork{}
	for _, w := range works {
		byCluster[w.Namespace] = w
	}
	wanted := map[string]bool{}
	keep := map[string]bool{} // works of refs whose decisions cannot be trusted right now
	var outs []refOutcome
	var requeue time.Duration
	var errs []error
	st := workv1alpha1.ManifestWorkReplicaSetStatus{PlacementsSummary: []workv1alpha1.PlacementSummary{}}
	desiredTotal := 0
	for _, ref := range mwrs.Spec.PlacementRefs {
		out, err := r.rolloutRef(ctx, &mwrs, ref, hash, now, byCluster, wanted)
		if err != nil {
			errs = append(errs, err)
		}
		if out.unknown != "" || out.inFlux {
			// Never delete on a missing or half-written answer: keep this ref's works
			// and look again soon (the Placement and decision watches also bring us back).
			for _, w := range works {
				if w.Labels[workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey] == ref.Name {
					keep[w.Namespace] = true
					out.kept++
				}
			}
			if out.inFlux {
				if out.plan.RequeueAfter == 0 || out.plan.RequeueAfter > recheckInFlux {
					out.plan.RequeueAfter = recheckInFlux
				}
			} else {
				out.plan.RequeueAfter = recheckUnknown
			}
			log.FromContext(ctx).V(btoi(out.inFlux)).Info("keeping the works of a placementRef whose decisions cannot be used", "placement", ref.Name,
				"why", out.unknown, "inFlux", out.inFlux, "kept", out.kept)
		}
		outs = append(outs, out)
		if out.plan.RequeueAfter > 0 && (requeue == 0 || out.plan.RequeueAfter < requeue) {
			requeue = out.plan.RequeueAfter
		}
		var refWorks []*workv1.ManifestWork
		counted := map[string]bool{}
		for _, names := range out.groups {
			for _, c := range names {
				if w := byCluster[c]; w != nil && w.Labels[workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey] == ref.Name {
					refWorks = append(refWorks, w)
					counted[c] = true
				}
			}
		}
		if out.unknown != "" || out.inFlux { // the summary also counts the kept works
			for _, w := range works {
				if !counted[w.Namespace] && w.Labels[workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey] == ref.Name {
					refWorks = append(refWorks, w)
				}
			}
		}
		desiredTotal += out.decided
		st.PlacementsSummary = append(st.PlacementsSummary, workv1alpha1.PlacementSummary{
			Name:                    ref.Name,
			AvailableDecisionGroups: availableGroups(out),
			Summary:                 Summarize(refWorks, hash, out.decided),
		})
	}

	// Works of clusters no placement decides on any more go; works of refs whose
	// decisions cannot be read stay.
	var kept []*workv1.ManifestWork
	for _, w := range works {
		if wanted[w.Namespace] || keep[w.Namespace] {
			kept = append(kept, w)
			continue
		}
		if w.DeletionTimestamp == nil {
			if err := client.IgnoreNotFound(r.Delete(ctx, w)); err != nil {
				errs = append(errs, fmt.Errorf("delete ManifestWork %s/%s: %w", w.Namespace, w.Name, err))
			}
		}
	}

	st.Summary = Summarize(kept, hash, desiredTotal)
	st.Conditions = mwrs.Status.Conditions
	for _, c := range conditions(mwrs.Generation, outs) {
		meta.SetStatusCondition(&st.Conditions, c)
	}
	next := mwrs
	next.Status = st
	statusfit.Fit(ctx, r.recorder, &next)
	if !reflect.DeepEqual(next.Status, mwrs.Status) {
		if err := r.Status().Update(ctx, &next); err != nil && !apierrors.IsConflict(err) {
			errs = append(errs, err)
		}
	}
	return ctrl.Result{RequeueAfter: requeue}, errors.Join(errs...)
}

// How soon a replica set looks again at a placementRef whose decisions are being
// rewritten, or cannot be used at all (watches usually come first).
const (
	recheckInFlux  = time.Second
	recheckUnknown = 30 * time.Second
)

// rolloutRef plans and applies the rollout for one placementRef. wanted collects
// the clusters that keep a work.
func (r *Reconciler) rolloutRef(ctx context.Context, mwrs *workv1alpha1.ManifestWorkReplicaSet, ref workv1alpha1.LocalPlacementReference,
	hash string, now time.Time, byCluster map[string]*workv1.ManifestWork, wanted map[string]bool) (refOutcome, error) {
	out := refOutcome{name: ref.Name, groups: map[int32][]string{}, available: map[string]bool{}}
	d, err := placementread.Read(ctx, r.Client, mwrs.Namespace, ref.Name)
	out.found = d.Found
	switch {
	case err != nil && !d.Found:
		out.unknown = "could not be read: " + placementread.Cause(err).Error()
		return out, err
	case err != nil:
		out.unknown = "has decisions that could not be read: " + placementread.Cause(err).Error()
		return out, err
	case !d.Found:
		out.unknown = "not found in this namespace"
		return out, nil
	}
	own := d.Own
	switch d.Readiness {
	case placementread.Unknown:
		out.unknown = d.Reason
		return out, nil
	case placementread.InFlux:
		out.inFlux = true
	}
	accepted, err := r.accepted(ctx, own)
	if err != nil {
		out.unknown = "decides clusters whose acceptance could not be read: " + err.Error()
		return out, err
	}
	decided, held := SplitDecisions(own, wanted, accepted)
	if len(held) > 0 {
		log.FromContext(ctx).Info("decided clusters the hub has not accepted get no work written", "placement", ref.Name, "clusters", held)
	}
	var clusters []rollout.Cluster
	for _, dc := range decided {
		state, since := WorkState(byCluster[dc.Name], hash)
		clusters = append(clusters, rollout.Cluster{Name: dc.Name, GroupIndex: dc.GroupIndex, GroupName: dc.GroupName, State: state, Since: since})
		out.groups[dc.GroupIndex] = append(out.groups[dc.GroupIndex], dc.Name)
		out.available[dc.Name] = byCluster[dc.Name] != nil &&
			meta.IsStatusConditionTrue(byCluster[dc.Name].Status.Conditions, workv1.WorkAvailable)
	}
	out.decided = len(clusters)
	plan, err := rollout.Compute(ref.RolloutStrategy, clusters, now)
	if err != nil {
		out.planErr = err
		return out, nil
	}
	out.plan = plan
	timedOut := map[string]bool{}
	for _, n := range plan.TimedOut {
		timedOut[n] = true
	}
	var errs []error
	for _, c := range clusters {
		switch {
		case c.State == rollout.Failed || timedOut[c.Name]:
			out.failed++
		case c.State != rollout.Succeeded:
			out.notYet++
		}
		if c.State != rollout.ToApply || !plan.Apply[c.Name] {
			continue
		}
		if err := r.applyWork(ctx, mwrs, ref.Name, c.Name, hash, now, byCluster[c.Name]); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// accepted reads, from the cache, whether the hub accepted each cluster the
// decisions list (ocm.Accepted); a cluster that does not exist is not.
func (r *Reconciler) accepted(ctx context.Context, decisions []clusterv1beta1.PlacementDecision) (map[string]bool, error) {
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
			}
		}
	}
	return out, nil
}

// applyWork creates or updates the cluster's work with the current template.
func (r *Reconciler) applyWork(ctx context.Context, mwrs *workv1alpha1.ManifestWorkReplicaSet, placement, cluster, hash string, now time.Time, existing *workv1.ManifestWork) error {
	w := existing
	if w == nil {
		w = &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: mwrs.Name, Namespace: cluster}}
	} else {
		w = w.DeepCopy()
	}
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey] = ownerKey(mwrs)
	w.Labels[workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey] = placement
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[TemplateHashAnnotation] = hash
	w.Annotations[RolloutStartedAnnotation] = now.UTC().Format(time.RFC3339)
	w.Spec = *mwrs.Spec.ManifestWorkTemplate.DeepCopy()
	var err error
	if existing == nil {
		err = r.Create(ctx, w)
	} else {
		err = r.Update(ctx, w)
	}
	if err != nil {
		return fmt.Errorf("write ManifestWork %s/%s: %w", cluster, mwrs.Name, err)
	}
	log.FromContext(ctx).V(1).Info("rolled out", "cluster", cluster, "hash", hash)
	return nil
}

func ownerKey(m *workv1alpha1.ManifestWorkReplicaSet) string { return m.Namespace + "." + m.Name }

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
	controllerutil.RemoveFinalizer(m, workv1alpha1.ManifestWorkReplicaSetFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Update(ctx, m))
}

// availableGroups is "<groups whose works are all available>/<groups>".
func availableGroups(o refOutcome) string {
	ok := 0
	for _, names := range o.groups {
		all := true
		for _, n := range names {
			all = all && o.available[n]
		}
		if all {
			ok++
		}
	}
	return fmt.Sprintf("%d/%d", ok, len(o.groups))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
