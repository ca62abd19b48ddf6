package configpolicy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/conditions"
	"flotilla.dev/flotilla/policy/configpolicy/evaluate"
)

// errRetry marks a transient conflict (stale cache, concurrent writer): the
// policy is evaluated again shortly and no status is written now.
var errRetry = errors.New("retry")

// reconcile evaluates one policy: get, finalizer, throttle, evaluate,
// enforce, status. It returns when to evaluate again (0: on the next change).
func (r *Runner) reconcile(ctx context.Context, key string) (time.Duration, error) {
	obj, exists, err := r.policy.GetStore().GetByKey(key)
	if err != nil {
		return 0, err
	}
	if !exists {
		r.forget(key)
		return 0, nil
	}
	u := obj.(*unstructured.Unstructured).DeepCopy()
	if u, err = r.fresh(ctx, key, u); err != nil || u == nil {
		return 0, err
	}
	p := &policyv1.ConfigurationPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		return 0, r.writeUnreadable(ctx, u, err)
	}
	if p.DeletionTimestamp != nil {
		return 0, r.finalize(ctx, key, u, p)
	}
	if u, err = r.ensureFinalizer(ctx, u, p); err != nil {
		return 0, err
	}
	if wait, skip := r.throttle(key, p); skip {
		return wait, nil
	}

	start := r.opts.Now()
	res := evaluate.Policy(p, &cluster{w: r.watches, mapper: r.mapper})
	r.listen(key, p, res)
	r.confirmMismatches(ctx, res)
	if res.Enforce {
		err := r.enforce(ctx, res)
		r.rememberCreated(key, res)
		if err != nil {
			return 0, err
		}
	}
	prev := p.Status.DeepCopy()
	r.mu.Lock()
	prev.RelatedObjects = append(prev.RelatedObjects, r.created[key]...)
	r.mu.Unlock()
	status := res.Status(prev, start)
	r.opts.Metrics.GovernanceInfo.WithLabelValues("ConfigurationPolicy", p.Name, p.Namespace).Set(governanceValue(status.ComplianceState))
	r.pruneRemoved(ctx, p, res)
	msg := res.ComplianceMessage(status, evaluate.UsingWatch(p, status.ComplianceState))
	if err := r.writeStatus(ctx, u, p, msg, status, res); err != nil {
		return 0, err
	}
	r.mu.Lock()
	delete(r.created, key) // the status now records them
	r.mu.Unlock()
	elapsed := r.opts.Now().Sub(start)
	r.opts.Metrics.EvaluationSeconds.Observe(elapsed.Seconds())
	r.opts.Metrics.Evaluations.WithLabelValues(string(status.ComplianceState)).Inc()

	r.mu.Lock()
	var before evaluate.Dropped
	if st := r.state[key]; st != nil {
		before = st.dropped
	}
	r.state[key] = &policyState{lastEval: start, generation: p.Generation, compliance: status.ComplianceState, dropped: res.Dropped()}
	r.mu.Unlock()
	if d := res.Dropped(); d.Any() && d != before {
		r.reportDropped(ctx, p, d)
	}
	d, never := interval(p, status.ComplianceState)
	if res.Retryable() && !never && (d == 0 || d > r.opts.RetryInterval) {
		d = r.opts.RetryInterval
	}
	return d, nil
}

// fresh returns the policy as the engine last wrote it or newer. The
// informer cache may not have seen the engine's last write yet; comparing a
// new status with a stale one would skip a needed write (or repeat a history
// entry), so a cache behind the engine's own write is bypassed with a GET.
// It returns nil when the policy is gone.
func (r *Runner) fresh(ctx context.Context, key string, cached *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	r.mu.Lock()
	last, ok := r.written[key]
	r.mu.Unlock()
	if !ok || last == cached.GetResourceVersion() {
		return cached, nil
	}
	got, err := r.dyn.Resource(policiesGVR).Namespace(cached.GetNamespace()).Get(ctx, cached.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		r.forget(key)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r.wrote(key, got)
	return got, nil
}

// wrote records the resourceVersion of the engine's latest view of a policy.
func (r *Runner) wrote(key string, obj *unstructured.Unstructured) {
	r.mu.Lock()
	r.written[key] = obj.GetResourceVersion()
	r.mu.Unlock()
}

// rememberCreated records the objects res created, as related objects with
// createdByPolicy, until a status write records them.
func (r *Runner) rememberCreated(key string, res *evaluate.Result) {
	st := res.Status(nil, r.opts.Now())
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ro := range st.RelatedObjects {
		if ro.Properties != nil && ro.Properties.CreatedByPolicy != nil && *ro.Properties.CreatedByPolicy {
			r.created[key] = append(r.created[key], ro)
		}
	}
}

func (r *Runner) forget(key string) {
	r.mu.Lock()
	delete(r.written, key)
	delete(r.created, key)
	delete(r.state, key)
	delete(r.unknown, key)
	r.mu.Unlock()
	r.watches.setInterests(key, nil)
	if ns, name, err := cache.SplitMetaNamespaceKey(key); err == nil {
		r.opts.Metrics.GovernanceInfo.DeleteLabelValues("ConfigurationPolicy", name, ns)
	}
}

// interval is the evaluationInterval for a state; never is true for "never".
func interval(p *policyv1.ConfigurationPolicy, s policyv1.ComplianceState) (d time.Duration, never bool) {
	v := p.Spec.EvaluationInterval.NonCompliant
	if s == policyv1.Compliant {
		v = p.Spec.EvaluationInterval.Compliant
	}
	if strings.EqualFold(v, "never") {
		return 0, true
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, false
	}
	return d, false
}

// throttle applies evaluationInterval: skip is true when the policy must not
// be evaluated now; wait is when to look again.
func (r *Runner) throttle(key string, p *policyv1.ConfigurationPolicy) (wait time.Duration, skip bool) {
	r.mu.Lock()
	st := r.state[key]
	r.mu.Unlock()
	if st == nil {
		// After a restart, "never" still holds for the generation in the status.
		_, never := interval(p, p.Status.ComplianceState)
		return 0, never && p.Status.LastEvaluatedGeneration == p.Generation && p.Generation != 0
	}
	if st.generation != p.Generation {
		return 0, false
	}
	d, never := interval(p, st.compliance)
	if never {
		return 0, true
	}
	if since := r.opts.Now().Sub(st.lastEval); d > 0 && since < d {
		return d - since, true
	}
	return 0, false
}

// listen records which objects should re-trigger this policy.
func (r *Runner) listen(key string, p *policyv1.ConfigurationPolicy, res *evaluate.Result) {
	in := map[schema.GroupVersionResource]*interest{}
	unknown := false
	for _, t := range res.Templates {
		var uk *evaluate.UnknownKindError
		if errors.As(t.Error, &uk) {
			unknown = true
		}
		if t.Mapping.Resource == "" {
			continue
		}
		gvr := t.Mapping.GVR()
		i := in[gvr]
		if i == nil {
			i = &interest{names: map[string]bool{}}
			in[gvr] = i
		}
		if t.Unnamed {
			i.anyName = true
		} else {
			i.names[t.Name] = true
		}
	}
	// What templates read (fromSecret, lookup...): a change to it is a
	// change to the policy, as upstream's watches of template lookups.
	for _, rd := range res.TemplateReads {
		i := in[rd.Resource]
		if i == nil {
			i = &interest{names: map[string]bool{}}
			in[rd.Resource] = i
		}
		if rd.Name == "" {
			i.anyName = true
		} else {
			i.names[rd.Name] = true
		}
	}
	sel := p.Spec.NamespaceSelector
	if len(sel.Include)+len(sel.Exclude)+len(sel.MatchLabels)+len(sel.MatchExpressions) > 0 {
		in[namespacesGVR] = &interest{anyName: true}
	}
	r.watches.setInterests(key, in)
	r.mu.Lock()
	if unknown {
		r.unknown[key] = true
	} else {
		delete(r.unknown, key)
	}
	r.mu.Unlock()
}

// confirmMismatches is ConfirmMismatches with the engine's client and log.
func (r *Runner) confirmMismatches(ctx context.Context, res *evaluate.Result) {
	ConfirmMismatches(ctx, r.dyn, res, r.opts.EventSource, r.log)
}

// ConfirmMismatches asks the apiserver (a server-side dry-run update, which
// changes nothing) whether each mismatch would change anything: defaulting
// and normalisation can make a template look different from an object the
// update would leave as it is. Such findings become Matches; for the others
// the diff becomes the apiserver's. A failed dry-run (say, no update
// permission) keeps the local comparison.
func ConfirmMismatches(ctx context.Context, dyn dynamic.Interface, res *evaluate.Result, fieldManager string, log logr.Logger) {
	for _, t := range res.Templates {
		for _, f := range t.Findings {
			if f.Outcome != evaluate.Mismatch || f.Action != evaluate.Update {
				continue
			}
			// No resourceVersion: a concurrent writer (a controller updating
			// status or annotations) must not turn the question into a conflict.
			desired := f.Desired.DeepCopy()
			unstructured.RemoveNestedField(desired.Object, "metadata", "resourceVersion")
			got, err := resourceOf(dyn, f).Update(ctx, desired, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: fieldManager})
			if err != nil {
				log.V(1).Info("server-side dry-run failed; keeping the local comparison", "object", f.Name, "error", err.Error())
				continue
			}
			if sameObject(f.Live, got) {
				f.Outcome, f.Action, f.Mismatches, f.Diff, f.Desired = evaluate.Matches, evaluate.None, nil, "", nil
				continue
			}
			f.Diff = t.DiffOf(f.Namespace, f.Name, f.Live.Object, got.Object)
			if t.RecordDiff == policyv1.RecordDiffLog && f.Diff != "" {
				log.Info("object differs from its template", "policy", res.Policy.Namespace+"/"+res.Policy.Name, "object", f.Name, "diff", f.Diff)
			}
		}
	}
}

// sameObject compares two versions of an object without the fields the
// apiserver changes on every write, and without status (an update never
// changes it).
func sameObject(a, b *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := runtime.DeepCopyJSON(u.Object)
		delete(c, "status")
		if md, ok := c["metadata"].(map[string]any); ok {
			delete(md, "managedFields")
			delete(md, "resourceVersion")
			delete(md, "generation")
		}
		return c
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

func (r *Runner) resource(f *evaluate.Finding) dynamicResource { return resourceOf(r.dyn, f) }

func resourceOf(dyn dynamic.Interface, f *evaluate.Finding) dynamicResource {
	ri := dyn.Resource(f.Mapping.GVR())
	if f.Namespace != "" {
		return ri.Namespace(f.Namespace)
	}
	return ri
}

// enforce carries out the planned actions and records their outcome.
func (r *Runner) enforce(ctx context.Context, res *evaluate.Result) error {
	for _, f := range res.Actions() {
		var err error
		switch f.Action {
		case evaluate.Create:
			var got *unstructured.Unstructured
			got, err = r.resource(f).Create(ctx, f.Desired, metav1.CreateOptions{FieldManager: r.opts.EventSource})
			if err == nil {
				f.CreatedByPolicy, f.UID = true, string(got.GetUID())
			}
			if apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("%s %s: created meanwhile: %w", f.Mapping.Resource, f.Name, errRetry)
			}
		case evaluate.Update:
			_, err = r.resource(f).Update(ctx, f.Desired, metav1.UpdateOptions{FieldManager: r.opts.EventSource})
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return fmt.Errorf("%s %s: changed meanwhile: %w", f.Mapping.Resource, f.Name, errRetry)
			}
		case evaluate.Delete:
			uid := f.Live.GetUID()
			err = r.resource(f).Delete(ctx, f.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if apierrors.IsNotFound(err) {
				err = nil
			}
			if apierrors.IsConflict(err) {
				return fmt.Errorf("%s %s: replaced meanwhile: %w", f.Mapping.Resource, f.Name, errRetry)
			}
		}
		if err != nil {
			f.ApplyError = err
			continue
		}
		f.Applied = f.Action
		r.log.Info("enforced", "policy", res.Policy.Namespace+"/"+res.Policy.Name, "action", string(f.Action),
			"resource", f.Mapping.Resource, "namespace", f.Namespace, "name", f.Name)
	}
	return nil
}

// maxObjectBytes is the most a policy object (spec and status, as JSON) may
// weigh when its status is written: etcd refuses a request over 1.5 MiB
// (--max-request-bytes' default, "etcdserver: request is too large"); the
// rest is room for the request's envelope and managedFields.
const maxObjectBytes = 1_400_000

// writeStatus writes the status when it changed, and records a history entry
// and a compliance event when the compliance message changed. res (nil for
// a status that is not an evaluation's) leaves related objects out when the
// object would otherwise pass maxObjectBytes.
func (r *Runner) writeStatus(ctx context.Context, u *unstructured.Unstructured, p *policyv1.ConfigurationPolicy,
	msg string, status policyv1.ConfigurationPolicyStatus, res *evaluate.Result) error {
	var event *corev1.Event
	if len(p.Status.History) == 0 || !conditions.SameMessage(p.Status.History[0].Message, msg) {
		now := metav1.NewTime(r.opts.Now().UTC().Truncate(time.Second))
		event = r.event(p, status.ComplianceState, msg, now)
		status.History = append([]policyv1.ComplianceHistory{{LastTimestamp: now, Message: msg, EventName: event.Name}}, p.Status.History...)
		if len(status.History) > policyv1.MaxHistory {
			status.History = status.History[:policyv1.MaxHistory]
		}
	}
	// Messages are cut to fit (the CRD sets no limit, but the object must stay
	// writable); the full text is logged, and is in the compliance Event.
	fitted := &policyv1.ConfigurationPolicy{TypeMeta: p.TypeMeta, ObjectMeta: p.ObjectMeta, Status: status}
	if cuts := conditions.FitStatus(fitted); len(cuts) > 0 {
		conditions.Report(r.log, nil, fitted, cuts)
	}
	status = fitted.Status
	if !statusEqual(p.Status, status) {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
		if err != nil {
			return err
		}
		u.Object["status"] = m
		if over := objectSize(u) - maxObjectBytes; over > 0 && res != nil {
			res.Shrink(&status, &p.Status, over, r.opts.Now())
			if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(&status); err != nil {
				return err
			}
			u.Object["status"] = m
		}
	}
	if !statusEqual(p.Status, status) { // the same once shrunk: nothing to write
		got, err := r.dyn.Resource(policiesGVR).Namespace(p.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: r.opts.EventSource})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return fmt.Errorf("status of %s/%s: %w", p.Namespace, p.Name, errRetry)
		}
		if err != nil {
			return err
		}
		r.wrote(p.Namespace+"/"+p.Name, got)
	}
	// The event follows the status it records, so a retried status write
	// never leaves a duplicate event behind.
	if event != nil {
		r.log.Info(msg, "policy", p.Namespace+"/"+p.Name)
		if _, err := r.kube.CoreV1().Events(p.Namespace).Create(ctx, event, metav1.CreateOptions{}); err != nil {
			r.log.Error(err, "cannot record compliance event", "policy", p.Namespace+"/"+p.Name)
		}
	}
	return nil
}

// objectSize is u's size as JSON, as etcd stores a custom resource.
func objectSize(u *unstructured.Unstructured) int {
	b, err := json.Marshal(u.Object)
	if err != nil {
		return 0 // the write reports it
	}
	return len(b)
}

// statusEqual ignores lastEvaluated: a status is rewritten only when what it
// says changed.
func statusEqual(a, b policyv1.ConfigurationPolicyStatus) bool {
	a.LastEvaluated, b.LastEvaluated = "", ""
	return reflect.DeepEqual(a, b)
}

// event is the compliance event for a new state, on the owning Policy (when
// the ConfigurationPolicy has one) or on the ConfigurationPolicy.
func (r *Runner) event(p *policyv1.ConfigurationPolicy, state policyv1.ComplianceState, msg string, now metav1.Time) *corev1.Event {
	ref := corev1.ObjectReference{
		APIVersion: policyv1.GroupVersion.String(), Kind: "ConfigurationPolicy",
		Namespace: p.Namespace, Name: p.Name, UID: p.UID,
	}
	for _, o := range p.OwnerReferences {
		if o.Kind == "Policy" && strings.HasPrefix(o.APIVersion, policyv1.GroupName+"/") {
			ref = corev1.ObjectReference{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: p.Namespace, Name: o.Name, UID: o.UID}
		}
	}
	typ := corev1.EventTypeWarning
	if state == policyv1.Compliant {
		typ = corev1.EventTypeNormal
	}
	return &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", ref.Name, r.opts.Now().UnixNano()), Namespace: p.Namespace},
		InvolvedObject:      ref,
		Reason:              "policy: " + p.Namespace + "/" + p.Name,
		Message:             msg,
		Type:                typ,
		Source:              corev1.EventSource{Component: r.opts.EventSource},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		ReportingController: r.opts.EventSource,
	}
}

// ReasonRelatedObjectsTruncated is the reason of the Warning Event that says
// what a status left out of its related objects (see evaluate.RelatedBudget).
const ReasonRelatedObjectsTruncated = "RelatedObjectsTruncated"

// reportDropped logs and records (a Warning Event on the policy) what its
// status left out of its related objects, when that changes.
func (r *Runner) reportDropped(ctx context.Context, p *policyv1.ConfigurationPolicy, d evaluate.Dropped) {
	r.log.Info("related objects left out of the status", "policy", p.Namespace+"/"+p.Name, "detail", d.String())
	now := metav1.NewTime(r.opts.Now().UTC().Truncate(time.Second))
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", p.Name, r.opts.Now().UnixNano()), Namespace: p.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: policyv1.GroupVersion.String(), Kind: "ConfigurationPolicy",
			Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Reason: ReasonRelatedObjectsTruncated, Message: d.String(), Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: r.opts.EventSource},
		FirstTimestamp: now, LastTimestamp: now, Count: 1, ReportingController: r.opts.EventSource,
	}
	if _, err := r.kube.CoreV1().Events(p.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		r.log.Error(err, "cannot record event", "policy", p.Namespace+"/"+p.Name, "reason", ReasonRelatedObjectsTruncated)
	}
}

// writeUnreadable marks a policy the engine cannot decode as NonCompliant.
func (r *Runner) writeUnreadable(ctx context.Context, u *unstructured.Unstructured, cause error) error {
	msg, _ := conditions.FitMessage(fmt.Sprintf("the policy cannot be read: %v", cause), conditions.MaxMessage)
	if cur, _, _ := unstructured.NestedString(u.Object, "status", "compliant"); cur == string(policyv1.NonCompliant) {
		if d, _, _ := unstructured.NestedSlice(u.Object, "status", "compliancyDetails"); len(d) == 1 && strings.Contains(fmt.Sprint(d), msg) {
			return nil
		}
	}
	u.Object["status"] = map[string]any{
		"compliant": string(policyv1.NonCompliant),
		"compliancyDetails": []any{map[string]any{
			"Compliant": string(policyv1.NonCompliant),
			"conditions": []any{map[string]any{
				"type": evaluate.Violation, "status": "True", "reason": "K8s error", "message": msg,
				"lastTransitionTime": r.opts.Now().UTC().Format(time.RFC3339),
			}},
		}},
	}
	_, err := r.dyn.Resource(policiesGVR).Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
}

// ensureFinalizer keeps the prune finalizer exactly while pruneObjectBehavior needs it.
func (r *Runner) ensureFinalizer(ctx context.Context, u *unstructured.Unstructured, p *policyv1.ConfigurationPolicy) (*unstructured.Unstructured, error) {
	want := p.Spec.PruneObjectBehavior == policyv1.PruneDeleteAll || p.Spec.PruneObjectBehavior == policyv1.PruneDeleteIfCreated
	fins := u.GetFinalizers()
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
		return u, nil
	}
	if want {
		kept = append(fins, Finalizer)
	}
	u.SetFinalizers(kept)
	got, err := r.dyn.Resource(policiesGVR).Namespace(p.Namespace).Update(ctx, u, metav1.UpdateOptions{FieldManager: r.opts.EventSource})
	if apierrors.IsConflict(err) {
		return nil, fmt.Errorf("finalizer of %s/%s: %w", p.Namespace, p.Name, errRetry)
	}
	if err == nil {
		r.wrote(p.Namespace+"/"+p.Name, got)
	}
	return got, err
}

// finalize prunes the policy's objects as pruneObjectBehavior says, then
// removes the finalizer. While an object cannot be deleted (or its deletion
// does not finish: a finalizer of its own) the policy keeps its finalizer
// and says so in its status, as upstream's: Terminating, `Failed to delete
// objects: ...`; it is tried again with backoff.
func (r *Runner) finalize(ctx context.Context, key string, u *unstructured.Unstructured, p *policyv1.ConfigurationPolicy) error {
	if !containsString(u.GetFinalizers(), Finalizer) {
		r.forget(key)
		return nil
	}
	if failures := r.prune(ctx, p, p.Status.RelatedObjects); len(failures) > 0 {
		if err := r.writeTerminating(ctx, u, p, failures); err != nil {
			return err
		}
		return fmt.Errorf("prune %s/%s: failed to delete objects %s", p.Namespace, p.Name, strings.Join(failures, ", "))
	}
	var kept []string
	for _, f := range u.GetFinalizers() {
		if f != Finalizer {
			kept = append(kept, f)
		}
	}
	patch := fmt.Sprintf(`{"metadata":{"finalizers":%s,"resourceVersion":%q}}`, jsonList(kept), u.GetResourceVersion())
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

// ReasonCleanupError is upstream's condition reason of a policy whose
// objects could not all be pruned.
const ReasonCleanupError = "Error cleaning up child objects"

// writeTerminating records a failed prune as upstream does: the policy is
// Terminating, with one violation `Failed to delete objects: ...`; its
// related objects are kept as they were.
func (r *Runner) writeTerminating(ctx context.Context, u *unstructured.Unstructured, p *policyv1.ConfigurationPolicy, failures []string) error {
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
	return r.writeStatus(ctx, u, p, msg, status, nil)
}

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
