package configpolicy

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
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
	p, u, err := r.fresh(ctx, key, obj)
	if err != nil || (p == nil && u == nil) {
		return 0, err
	}
	if p == nil {
		// The policy does not decode: the cache keeps it whole, to say why.
		cause := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &policyv1.ConfigurationPolicy{})
		return 0, r.writeUnreadable(ctx, u, cause)
	}
	if p.DeletionTimestamp != nil {
		return 0, r.finalize(ctx, key, p)
	}
	if err := r.ensureFinalizer(ctx, p); err != nil {
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
	if err := r.writeStatus(ctx, p, msg, status, res); err != nil {
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

// fresh returns a copy of the cached policy (decoded, or whole when it does
// not decode: then p is nil and u is set), or newer: the informer cache may
// not have seen the engine's last write yet; comparing a new status with a
// stale one would skip a needed write (or repeat a history entry), so a
// cache behind the engine's own write is bypassed with a GET. Both are nil
// when the policy is gone.
func (r *Runner) fresh(ctx context.Context, key string, cached any) (p *policyv1.ConfigurationPolicy, u *unstructured.Unstructured, err error) {
	m, err := meta.Accessor(cached)
	if err != nil {
		return nil, nil, err
	}
	r.mu.Lock()
	last, ok := r.written[key]
	r.mu.Unlock()
	if !ok || last == m.GetResourceVersion() {
		switch o := cached.(type) {
		case *policyv1.ConfigurationPolicy:
			return o.DeepCopy(), nil, nil
		case *unstructured.Unstructured:
			return nil, o.DeepCopy(), nil
		}
		return nil, nil, fmt.Errorf("policy cache holds a %T", cached)
	}
	got, err := r.dyn.Resource(policiesGVR).Namespace(m.GetNamespace()).Get(ctx, m.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		r.forget(key)
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	r.wrote(key, got)
	if p, ok := decodePolicy(got); ok {
		return p, nil, nil
	}
	return nil, got, nil
}

// wrote records the resourceVersion of the engine's latest view of a policy.
func (r *Runner) wrote(key string, obj metav1.Object) {
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

// ReasonRelatedObjectsTruncated is the reason of the Warning Event that says
// what a status left out of its related objects (see evaluate.RelatedBudget).
const ReasonRelatedObjectsTruncated = "RelatedObjectsTruncated"

// ReasonCleanupError is upstream's condition reason of a policy whose
// objects could not all be pruned.
const ReasonCleanupError = "Error cleaning up child objects"
