package configpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/conditions"
	"flotilla.dev/flotilla/policy/configpolicy/evaluate"
	"flotilla.dev/flotilla/policy/event"
)

// writeStatus writes the status when it changed, and records a history entry
// and a compliance event when the compliance message changed. res (nil for
// a status that is not an evaluation's) leaves related objects out when the
// object would otherwise pass maxObjectBytes.
func (r *Runner) writeStatus(ctx context.Context, p *policyv1.ConfigurationPolicy,
	msg string, status policyv1.ConfigurationPolicyStatus, res *evaluate.Result) error {
	var event *corev1.Event
	if len(p.Status.History) == 0 || !conditions.SameMessage(p.Status.History[0].Message, msg) {
		at := r.opts.Now()
		now := metav1.NewTime(at.UTC().Truncate(time.Second))
		event = r.event(p, status.ComplianceState, msg, at)
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
	var u *unstructured.Unstructured
	if !statusEqual(p.Status, status) {
		// The policy as written: its own copy, with the new status (a status
		// write takes nothing else from it).
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			return err
		}
		u = &unstructured.Unstructured{Object: obj}
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

// event is the compliance event for a new state at now (event.Compliance).
func (r *Runner) event(p *policyv1.ConfigurationPolicy, state policyv1.ComplianceState, msg string, now time.Time) *corev1.Event {
	return event.Compliance(p, policyv1.GroupVersion.WithKind("ConfigurationPolicy"), state, msg, now, r.opts.EventSource)
}

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
