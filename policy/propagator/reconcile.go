package propagator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/placementread"
	"flotilla.dev/flotilla/policy/hubtemplate"
)

// Event reasons on a root Policy.
const (
	// ReasonBindingProblem: a binding of the policy cannot place it (see the message).
	ReasonBindingProblem = "PlacementBindingProblem"
	// ReasonPolicyProblem: the policy itself cannot be propagated.
	ReasonPolicyProblem = "PolicyPropagationProblem"
	// ReasonReplicaFailed: a cluster's replica could not be written or removed.
	ReasonReplicaFailed = "ReplicaFailed"
)

// recheckUnsettled is how soon a root bound to a placement whose decisions are
// being rewritten looks again (the decision watch usually comes first).
const recheckUnsettled = time.Second

// Reconcile follows the skeleton: get (gone: remove the replicas), read the
// inputs, decide, write the replicas, write the status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := r.now()
	key := RootKey(req.Namespace, req.Name)
	var root policyv1.Policy
	if err := r.Get(ctx, req.NamespacedName, &root); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		r.metrics.forgetRoot(req.Namespace, req.Name)
		r.reported.Delete(key)
		r.refs.set(key, nil)
		r.secrets.Sync(ctx, r.refs.secretNamespaces())
		return ctrl.Result{}, r.removeAll(ctx, key)
	}
	if IsReplica(&root) {
		return ctrl.Result{}, nil
	}
	in, err := r.inputs(ctx, &root)
	if err != nil {
		r.metrics.Errors.WithLabelValues("read").Inc()
		return ctrl.Result{}, err
	}
	d := Decide(&root, in)
	r.report(&root, d.Problems)
	replicas, err := r.replicas(ctx, key)
	if err != nil {
		return ctrl.Result{}, err
	}

	var errs []error
	var refs []hubtemplate.Ref
	src := newMemoSource(apiSource{r.apiReader})
	for cluster, override := range d.Clusters {
		got, err := r.writeReplica(ctx, src, &root, cluster, override, replicas[cluster], &refs)
		if err != nil {
			r.metrics.Errors.WithLabelValues("replica").Inc()
			r.recorder.Eventf(&root, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, corev1.EventTypeWarning,
				ReasonReplicaFailed, "Propagate", "replica for cluster %s: %v", cluster, err)
			errs = append(errs, fmt.Errorf("cluster %s: %w", cluster, err))
			continue
		}
		replicas[cluster] = got
	}
	r.refs.set(key, refs)
	r.secrets.Sync(ctx, r.refs.secretNamespaces())
	for cluster, rep := range replicas {
		if _, ok := d.Clusters[cluster]; ok || (d.Unsettled && !root.Spec.Disabled) {
			continue
		}
		if err := client.IgnoreNotFound(r.Delete(ctx, rep)); err != nil {
			errs = append(errs, fmt.Errorf("remove the replica of cluster %s: %w", cluster, err))
			continue
		}
		delete(replicas, cluster)
	}

	if len(d.Skipped) > 0 {
		log.FromContext(ctx).Info("decided clusters the hub has not accepted get no replica", "root", key, "clusters", d.Skipped)
	}
	log.FromContext(ctx).V(1).Info("propagated", "clusters", d.Clusters, "unsettled", d.Unsettled, "placements", in.Placements, "replicas", len(replicas))
	st := RootStatus(d, replicas)
	r.metrics.observe(&root, st, replicas)
	if !equality.Semantic.DeepEqual(st, root.Status) {
		root.Status = st
		if err := r.Status().Update(ctx, &root); err != nil && !apierrors.IsConflict(err) {
			errs = append(errs, err)
		}
	}
	r.metrics.Latency.Observe(r.now().Sub(start).Seconds())
	if d.Unsettled {
		return ctrl.Result{RequeueAfter: recheckUnsettled}, errors.Join(errs...)
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// inputs reads the bindings and policy sets of the root's namespace and the
// decisions of every placement bound to the root. A read error stops the
// reconcile before anything is removed.
func (r *Reconciler) inputs(ctx context.Context, root *policyv1.Policy) (Inputs, error) {
	in := Inputs{Placements: map[string]PlacementState{}}
	var bindings policyv1.PlacementBindingList
	if err := r.List(ctx, &bindings, client.InNamespace(root.Namespace)); err != nil {
		return in, fmt.Errorf("list PlacementBindings: %w", err)
	}
	var sets policyv1beta1.PolicySetList
	if err := r.List(ctx, &sets, client.InNamespace(root.Namespace)); err != nil {
		return in, fmt.Errorf("list PolicySets: %w", err)
	}
	in.Bindings, in.PolicySets = bindings.Items, sets.Items
	d := Decide(root, in) // which placements matter
	for _, p := range d.Placements {
		if p.Placement == "" {
			continue
		}
		if _, done := in.Placements[p.Placement]; done {
			continue
		}
		st, err := r.placementState(ctx, root.Namespace, p.Placement)
		if err != nil {
			return in, err
		}
		in.Placements[p.Placement] = st
	}
	// Decided clusters the hub has not accepted (or that are gone) get no
	// replica. Read from the same cache the placement controller decides from.
	in.Unaccepted = map[string]bool{}
	for _, name := range DecidedClusters(in) {
		var mc clusterv1.ManagedCluster
		switch err := r.Get(ctx, client.ObjectKey{Name: name}, &mc); {
		case apierrors.IsNotFound(err):
			in.Unaccepted[name] = true
		case err != nil:
			return in, fmt.Errorf("get ManagedCluster %s: %w", name, err)
		case !ocm.Accepted(&mc):
			in.Unaccepted[name] = true
		}
	}
	return in, nil
}

func (r *Reconciler) placementState(ctx context.Context, ns, name string) (PlacementState, error) {
	d, err := placementread.Read(ctx, r.Client, ns, name)
	if err != nil {
		return PlacementState{}, err
	}
	if !d.Found {
		return PlacementState{Missing: true}, nil
	}
	// Unsettled: the placement has not decided for its current spec, or its
	// decisions span several PlacementDecisions that are being rewritten (a
	// cluster moving between pages may be missing from both for a moment). One
	// PlacementDecision is written at once: its list is trusted even while the
	// Placement's status count lags behind it.
	st := PlacementState{Unsettled: d.Readiness == placementread.Unknown ||
		d.Readiness == placementread.InFlux && len(d.Own) > 1}
	for _, c := range d.Clusters {
		st.Clusters = append(st.Clusters, c.Name)
	}
	return st, nil
}

// replicas returns the root's replicas by cluster namespace.
func (r *Reconciler) replicas(ctx context.Context, key string) (map[string]*policyv1.Policy, error) {
	var list policyv1.PolicyList
	if err := r.List(ctx, &list, client.MatchingFields{rootIndex: key}); err != nil {
		return nil, fmt.Errorf("list replicas of %s: %w", key, err)
	}
	out := map[string]*policyv1.Policy{}
	for i := range list.Items {
		// A Policy that only carries the label (another name, or labelled
		// for another cluster) is not this root's replica: neither counted,
		// rewritten nor removed.
		if IsWellFormedReplica(&list.Items[i]) {
			out[list.Items[i].Namespace] = &list.Items[i]
		}
	}
	return out, nil
}

// removeAll removes every replica of a root that is gone.
func (r *Reconciler) removeAll(ctx context.Context, key string) error {
	replicas, err := r.replicas(ctx, key)
	if err != nil {
		return err
	}
	var errs []error
	for _, rep := range replicas {
		if err := client.IgnoreNotFound(r.Delete(ctx, rep)); err != nil {
			errs = append(errs, err)
		}
	}
	if len(replicas) > 0 {
		log.FromContext(ctx).Info("root policy gone: replicas removed", "root", key, "replicas", len(replicas))
	}
	return errors.Join(errs...)
}

// writeReplica creates or rewrites the replica of root for cluster, with its
// hub templates resolved, and returns it. Hub template errors are written to
// the replica's status (NonCompliant) and do not fail the write.
func (r *Reconciler) writeReplica(ctx context.Context, src hubtemplate.Source, root *policyv1.Policy, cluster, override string,
	live *policyv1.Policy, refs *[]hubtemplate.Ref) (*policyv1.Policy, error) {
	want := Replica(root, cluster, override)
	failed, err := r.resolveTemplates(ctx, src, root, want, live, refs)
	if err != nil {
		return nil, err
	}
	got := live
	switch {
	case live == nil:
		if err := r.Create(ctx, want); err != nil {
			return nil, err
		}
		got = want
	case !ReplicaUpToDate(live, want):
		got = live.DeepCopy()
		got.Spec, got.Labels, got.Annotations = want.Spec, want.Labels, want.Annotations
		if err := r.Update(ctx, got); err != nil {
			return nil, err
		}
	}
	if len(failed) == 0 && isTemplateErrorStatus(got.Status) {
		// The error is fixed: drop the hub's verdict; the spoke reports anew.
		got = got.DeepCopy()
		got.Status = policyv1.PolicyStatus{}
		if err := r.Status().Update(ctx, got); err != nil {
			return nil, fmt.Errorf("clear the hub template error: %w", err)
		}
	}
	if len(failed) > 0 {
		st := templateErrorStatus(failed, metav1.NewTime(r.now()))
		if !sameTemplateErrors(got.Status, st) {
			got = got.DeepCopy()
			got.Status = st
			if err := r.Status().Update(ctx, got); err != nil {
				return nil, fmt.Errorf("report the hub template error: %w", err)
			}
		}
	}
	return got, nil
}

// report records each problem as a Warning event on the root (related to the
// binding at fault), once per change of the root's problems: events are rate
// limited per object, and repeating them on every reconcile would drown the
// new ones.
func (r *Reconciler) report(root *policyv1.Policy, problems []Problem) {
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.Binding+"\x00"+p.Message)
	}
	key := RootKey(root.Namespace, root.Name)
	joined := strings.Join(msgs, "\n")
	if prev, ok := r.reported.Load(key); ok && prev.(string) == joined {
		return
	}
	r.reported.Store(key, joined)
	for _, p := range problems {
		if p.Binding == "" {
			r.recorder.Eventf(root, nil, corev1.EventTypeWarning, ReasonPolicyProblem, "Propagate", "%s", p.Message)
			continue
		}
		// The related binding keeps events of different bindings apart (the
		// recorder merges events that differ only in their message).
		related := &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: p.Binding, Namespace: root.Namespace}}
		r.recorder.Eventf(root, related, corev1.EventTypeWarning, ReasonBindingProblem, "Propagate", "PlacementBinding %s: %s", p.Binding, p.Message)
	}
}
