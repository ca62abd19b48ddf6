package agent

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/ocm"
)

// Event forwarding: every compliance event of a replica's templates on the
// managed cluster goes to the hub as an Event on the hub replica, for the
// hub's compliance history (docs/compliance.md, History).

// ForwardAction is the action of the compliance events the framework agent
// forwards to the hub.
const ForwardAction = "ComplianceStateForwarded"

// HubEvents are the compliance events of the replica's templates on the
// managed cluster (all of them, not only the MaxHistory newest the status
// keeps), as the framework agent forwards them to the hub: on the hub replica
// rep, in its cluster namespace, labelled ocm.HistoryLabel, at the time the
// replica's history shows (whole seconds: lastTimestamp) with the event's
// microsecond time in eventTime (preciseTime), so that the hub orders
// transitions within one second. An event's name is a digest of its
// template, microsecond time and message, so forwarding the same event again
// (an agent restart) names the same hub event.
func HubEvents(namespace string, rep *policyv1.Policy, templates []TemplateState, events []corev1.Event) []corev1.Event {
	reasons := map[string]bool{}
	for _, t := range templates {
		reasons[EventReason(namespace, t.Name)] = true
	}
	var out []corev1.Event
	for _, e := range events {
		if e.InvolvedObject.Kind != "Policy" || e.InvolvedObject.Name != rep.Name || e.Namespace != namespace || !reasons[e.Reason] {
			continue
		}
		precise := preciseTime(e)
		at := metav1.Unix(precise.Unix(), 0)
		h := fnv.New64a()
		fmt.Fprintf(h, "%s\x00%d\x00%s", e.Reason, precise.UnixMicro(), e.Message)
		typ := corev1.EventTypeWarning
		if EventState(e.Message) == policyv1.Compliant {
			typ = corev1.EventTypeNormal
		}
		out = append(out, corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%016x", rep.Name, h.Sum64()), Namespace: rep.Namespace,
				Labels: map[string]string{ocm.HistoryLabel: "true"}},
			InvolvedObject: corev1.ObjectReference{APIVersion: policyv1.GroupVersion.String(), Kind: "Policy",
				Namespace: rep.Namespace, Name: rep.Name, UID: rep.UID},
			Reason: e.Reason, Message: e.Message, Type: typ,
			Source:         corev1.EventSource{Component: ocm.PolicyFrameworkAddon},
			FirstTimestamp: at, LastTimestamp: at, Count: 1,
			// An Event with an eventTime must say who reported it and what
			// was done (the apiserver's validation).
			EventTime: metav1.NewMicroTime(precise), ReportingController: ocm.PolicyFrameworkAddon,
			ReportingInstance: ocm.PolicyFrameworkAddon + "-" + namespace, Action: ForwardAction,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// forward creates on the hub the compliance events not forwarded yet; one
// that exists already (an agent restart) counts as forwarded.
func (y *syncer) forward(ctx context.Context, rep *policyv1.Policy, events []corev1.Event) error {
	done := y.forwarded[rep.Name]
	now := make(map[string]bool, len(events))
	for i := range events {
		e := &events[i]
		if !done[e.Name] {
			if err := y.hub.Create(ctx, e); err != nil && !apierrors.IsAlreadyExists(err) {
				y.forwarded[rep.Name] = now
				return fmt.Errorf("forward compliance event %s to the hub: %w", e.Name, err)
			}
		}
		now[e.Name] = true
	}
	y.forwarded[rep.Name] = now
	return nil
}
