package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/ocm"
)

// Status sync: the replica's status, from its templates' states and the
// compliance events on its copy, written on the copy and on the hub replica;
// the events forwarded to the hub (forward.go); and the compliance events
// the framework records itself.

// statusSync writes the status on the copy and on the hub replica. While a
// template's compliance event lags its state it writes nothing and says how
// soon to look again.
func (y *syncer) statusSync(ctx context.Context, rep, local *policyv1.Policy, states []TemplateState) (time.Duration, error) {
	var l corev1.EventList
	if err := y.spokeC.List(ctx, &l, client.InNamespace(y.ns)); err != nil {
		return 0, err
	}
	fwdErr := y.forward(ctx, rep, HubEvents(y.ns, rep, states, l.Items))
	compliant, details := Status(y.ns, local.Name, states, l.Items)
	t := Lagging(states, details)
	if t == "" {
		t = Unheard(states, details, time.Now(), maxEventLag)
	}
	if t != "" {
		// The engine wrote the template's status; its event follows (and
		// brings this policy back). Wait for it rather than pair the new
		// state with the old history (or none), unless it never comes.
		since, seen := y.lagging[local.Name]
		if !seen {
			since = time.Now()
			y.lagging[local.Name] = since
		}
		if time.Since(since) < maxEventLag {
			return time.Second, fwdErr
		}
		y.o.Log.Info("writing a status whose history lags its template's state", "policy", local.Name, "template", t)
	}
	delete(y.lagging, local.Name)
	want := policyv1.PolicyStatus{ComplianceState: compliant, Details: details}
	if !equality.Semantic.DeepEqual(local.Status.ComplianceState, want.ComplianceState) || !equality.Semantic.DeepEqual(local.Status.Details, want.Details) {
		upd := local.DeepCopy()
		upd.Status.ComplianceState, upd.Status.Details = want.ComplianceState, want.Details
		if err := y.spoke.Status().Patch(ctx, upd, client.MergeFrom(local)); err != nil {
			return 0, fmt.Errorf("write the status of policy %s/%s on the managed cluster: %w", y.ns, local.Name, err)
		}
	}
	if !equality.Semantic.DeepEqual(rep.Status.ComplianceState, want.ComplianceState) || !equality.Semantic.DeepEqual(rep.Status.Details, want.Details) {
		upd := rep.DeepCopy()
		upd.Status.ComplianceState, upd.Status.Details = want.ComplianceState, want.Details
		if err := y.hub.Status().Patch(ctx, upd, client.MergeFrom(rep)); err != nil {
			return 0, fmt.Errorf("write the status of replica %s/%s on the hub: %w", y.ns, rep.Name, err)
		}
	}
	return 0, fwdErr
}

// event records a compliance event the framework itself decides (Pending,
// template errors) on the copy, unless the newest one for the template says
// the same.
func (y *syncer) event(ctx context.Context, local *policyv1.Policy, template string, state policyv1.ComplianceState, msg string) {
	reason := EventReason(y.ns, template)
	var l corev1.EventList
	if err := y.spokeC.List(ctx, &l, client.InNamespace(y.ns)); err == nil {
		_, details := Status(y.ns, local.Name, []TemplateState{{Name: template}}, l.Items)
		if h := details[0].History; len(h) > 0 && h[0].Message == msg {
			return
		}
	}
	typ := corev1.EventTypeWarning
	if state == policyv1.Compliant {
		typ = corev1.EventTypeNormal
	}
	now := metav1.NewTime(time.Now())
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", local.Name, now.UnixNano()), Namespace: y.ns},
		InvolvedObject: corev1.ObjectReference{APIVersion: policyv1.GroupVersion.String(), Kind: "Policy", Namespace: y.ns, Name: local.Name, UID: local.UID},
		Reason:         reason, Message: msg, Type: typ,
		Source:         corev1.EventSource{Component: ocm.PolicyFrameworkAddon},
		FirstTimestamp: now, LastTimestamp: now, Count: 1, ReportingController: ocm.PolicyFrameworkAddon,
	}
	if err := y.spoke.Create(ctx, e); err != nil {
		y.o.Log.Error(err, "record event", "policy", local.Name)
	}
}
