package configpolicy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/conditions"
	"flotilla.dev/flotilla/policy/configpolicy/evaluate"
)

// ensureFinalizer keeps the prune finalizer exactly while pruneObjectBehavior
// needs it. It patches the finalizers alone (at p's resourceVersion), so
// nothing else of the policy is written back from the engine's copy; p
// follows the write.
func (r *Runner) ensureFinalizer(ctx context.Context, p *policyv1.ConfigurationPolicy) error {
	want := p.Spec.PruneObjectBehavior == policyv1.PruneDeleteAll || p.Spec.PruneObjectBehavior == policyv1.PruneDeleteIfCreated
	fins := p.Finalizers
	has := false
	var kept []string
	for _, f := range fins {
		if f == Finalizer {
			has = true
			continue
		}
		kept = append(kept, f)
	}
	if want == has {
		return nil
	}
	if want {
		kept = append(slices.Clone(fins), Finalizer)
	}
	patch := fmt.Sprintf(`{"metadata":{"finalizers":%s,"resourceVersion":%q}}`, jsonList(kept), p.ResourceVersion)
	got, err := r.dyn.Resource(policiesGVR).Namespace(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: r.opts.EventSource})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return fmt.Errorf("finalizer of %s/%s: %w", p.Namespace, p.Name, errRetry)
	}
	if err != nil {
		return err
	}
	r.wrote(p.Namespace+"/"+p.Name, got)
	p.Finalizers, p.ResourceVersion = got.GetFinalizers(), got.GetResourceVersion()
	return nil
}

// finalize prunes the policy's objects as pruneObjectBehavior says, then
// removes the finalizer. While an object cannot be deleted (or its deletion
// does not finish: a finalizer of its own) the policy keeps its finalizer
// and says so in its status, as upstream's: Terminating, `Failed to delete
// objects: ...`; it is tried again with backoff.
func (r *Runner) finalize(ctx context.Context, key string, p *policyv1.ConfigurationPolicy) error {
	if !containsString(p.Finalizers, Finalizer) {
		r.forget(key)
		return nil
	}
	if failures := r.prune(ctx, p, p.Status.RelatedObjects); len(failures) > 0 {
		if err := r.writeTerminating(ctx, p, failures); err != nil {
			return err
		}
		return fmt.Errorf("prune %s/%s: failed to delete objects %s", p.Namespace, p.Name, strings.Join(failures, ", "))
	}
	var kept []string
	for _, f := range p.Finalizers {
		if f != Finalizer {
			kept = append(kept, f)
		}
	}
	patch := fmt.Sprintf(`{"metadata":{"finalizers":%s,"resourceVersion":%q}}`, jsonList(kept), p.ResourceVersion)
	_, err := r.dyn.Resource(policiesGVR).Namespace(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	if apierrors.IsConflict(err) {
		return fmt.Errorf("finalizer of %s/%s: %w", p.Namespace, p.Name, errRetry)
	}
	if err == nil {
		r.forget(key)
	}
	return err
}

// writeTerminating records a failed prune as upstream does: the policy is
// Terminating, with one violation `Failed to delete objects: ...`; its
// related objects are kept as they were.
func (r *Runner) writeTerminating(ctx context.Context, p *policyv1.ConfigurationPolicy, failures []string) error {
	now := r.opts.Now()
	status := *p.Status.DeepCopy()
	status.ComplianceState = policyv1.Terminating
	status.LastEvaluated = now.UTC().Format(time.RFC3339)
	cond := policyv1.Condition{
		Type:               evaluate.Violation,
		Status:             metav1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(now.UTC().Truncate(time.Second)),
		Reason:             ReasonCleanupError,
		Message:            "Failed to delete objects: " + strings.Join(failures, ", "),
	}
	if len(p.Status.CompliancyDetails) == 1 {
		for _, pc := range p.Status.CompliancyDetails[0].Conditions {
			if pc.Type == cond.Type && pc.Reason == cond.Reason && conditions.SameMessage(pc.Message, cond.Message) {
				cond.LastTransitionTime = pc.LastTransitionTime
			}
		}
	}
	status.CompliancyDetails = []policyv1.TemplateStatus{{ComplianceState: policyv1.Terminating, Conditions: []policyv1.Condition{cond}}}
	msg := string(policyv1.Terminating) + "; " + cond.Type + " - " + cond.Message
	return r.writeStatus(ctx, p, msg, status, nil)
}
