package configpolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/configpolicy/evaluate"
)

// pruneRemoved deletes, as upstream does after an evaluation of an enforce
// policy with pruneObjectBehavior DeleteAll or DeleteIfCreated, the objects
// the status listed that the evaluation no longer relates (a template was
// removed or changed, a namespace is no longer selected). Nothing is pruned
// when a template failed (its objects are unknown, not gone). A failure is
// logged; the object is no longer the policy's.
func (r *Runner) pruneRemoved(ctx context.Context, p *policyv1.ConfigurationPolicy, res *evaluate.Result) {
	if !pruning(p) {
		return
	}
	for _, t := range res.Templates {
		if t.Error != nil {
			return
		}
	}
	now := res.Related(nil)
	var gone []policyv1.RelatedObject
	for _, old := range p.Status.RelatedObjects {
		if !slices.ContainsFunc(now, func(n policyv1.RelatedObject) bool { return n.Object == old.Object }) {
			gone = append(gone, old)
		}
	}
	if failures := r.prune(ctx, p, gone); len(failures) > 0 {
		r.log.Info("objects no longer related could not be pruned", "policy", p.Namespace+"/"+p.Name, "objects", strings.Join(failures, ", "))
	}
}

// pruning reports whether pruneObjectBehavior deletes anything: only for an
// enforce policy (an inform policy deletes nothing).
func pruning(p *policyv1.ConfigurationPolicy) bool {
	return p.Spec.RemediationAction.IsEnforce() &&
		(p.Spec.PruneObjectBehavior == policyv1.PruneDeleteAll || p.Spec.PruneObjectBehavior == policyv1.PruneDeleteIfCreated)
}

// prune deletes the related objects objs as pruneObjectBehavior says, as
// upstream does: DeleteAll every one that exists (those of templates
// without a name included), DeleteIfCreated only those the policy created,
// with the same UID. It returns the objects it could not delete, in
// upstream's words (`/v1, Kind=ConfigMap "x" in namespace y`): a refused
// delete, or a deletion that does not finish (the object has a finalizer).
func (r *Runner) prune(ctx context.Context, p *policyv1.ConfigurationPolicy, objs []policyv1.RelatedObject) []string {
	if !pruning(p) {
		return nil
	}
	var failures []string
	for _, ro := range objs {
		if ro.Object.Metadata.Name == "" || ro.Object.Metadata.Name == "-" {
			continue
		}
		created := ro.Properties != nil && ro.Properties.CreatedByPolicy != nil && *ro.Properties.CreatedByPolicy
		if p.Spec.PruneObjectBehavior == policyv1.PruneDeleteIfCreated && (!created || ro.Properties.UID == "") {
			continue
		}
		gvk := schema.FromAPIVersionAndKind(ro.Object.APIVersion, ro.Object.Kind)
		what := fmt.Sprintf("%s %q", gvk, ro.Object.Metadata.Name)
		if ro.Object.Metadata.Namespace != "" {
			what += " in namespace " + ro.Object.Metadata.Namespace
		}
		fail := func(err error) {
			r.log.Error(err, "cannot prune", "policy", p.Namespace+"/"+p.Name, "object", what)
			failures = append(failures, what)
		}
		m, err := (&cluster{w: r.watches, mapper: r.mapper}).Mapping(gvk)
		if err != nil {
			var uk *evaluate.UnknownKindError
			if !errors.As(err, &uk) { // a kind no longer served has nothing left to delete
				fail(err)
			}
			continue
		}
		f := &evaluate.Finding{Mapping: m, Namespace: ro.Object.Metadata.Namespace, Name: ro.Object.Metadata.Name}
		live, err := r.resource(f).Get(ctx, f.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			fail(err)
			continue
		case p.Spec.PruneObjectBehavior == policyv1.PruneDeleteIfCreated && string(live.GetUID()) != ro.Properties.UID:
			continue // replaced by an object the policy did not create
		case live.GetDeletionTimestamp() != nil:
			fail(fmt.Errorf("deletion is pending (finalizers %v)", live.GetFinalizers()))
			continue
		}
		uid := live.GetUID()
		err = r.resource(f).Delete(ctx, f.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		switch {
		case apierrors.IsNotFound(err), apierrors.IsConflict(err): // gone, or replaced by another object
			continue
		case err != nil:
			fail(err)
			continue
		}
		// The deletion finishes only when the object's own finalizers allow.
		if after, err := r.resource(f).Get(ctx, f.Name, metav1.GetOptions{}); err == nil && after.GetUID() == uid {
			fail(fmt.Errorf("deletion is pending (finalizers %v)", after.GetFinalizers()))
			continue
		} else if err != nil && !apierrors.IsNotFound(err) {
			fail(err)
			continue
		}
		r.log.Info("pruned", "policy", p.Namespace+"/"+p.Name, "resource", m.Resource, "namespace", f.Namespace, "name", f.Name)
	}
	return failures
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func jsonList(items []string) string {
	if len(items) == 0 {
		return "null"
	}
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ",") + "]"
}
