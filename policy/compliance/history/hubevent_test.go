package history_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// A forwarded event is the cluster's only when its replica is in the event's
// own namespace; the cluster comes from the replica, never from the event.
func TestFromHubEvent(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	replica := func(ns string) *policyv1.Policy {
		return &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "policies.p", Labels: map[string]string{
			policyv1.RootPolicyLabel: "policies.p", policyv1.ClusterNameLabel: ns}}}
	}
	event := func(mut func(e *corev1.Event)) *corev1.Event {
		e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: "policies.p.1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Policy", Namespace: "east", Name: "policies.p"},
			Reason:         "policy: east/check", Message: "NonCompliant; violation - pods [x] found", LastTimestamp: at}
		if mut != nil {
			mut(e)
		}
		return e
	}
	want := history.Event{Policy: "policies/p", Template: "check", Cluster: "east", State: compliance.NonCompliant,
		Message: "NonCompliant; violation - pods [x] found", Time: at.Time}
	tests := map[string]struct {
		e       *corev1.Event
		replica *policyv1.Policy
		err     string // "" when recorded as want
	}{
		"recorded":                   {event(nil), replica("east"), ""},
		"no replica":                 {event(nil), nil, "no replica policies.p in namespace east"},
		"replica of another cluster": {event(nil), replica("west"), "no replica policies.p in namespace east"},
		"involves another namespace": {event(func(e *corev1.Event) { e.InvolvedObject.Namespace = "west" }), replica("west"), "not a Policy in its own namespace"},
		"involves no Policy":         {event(func(e *corev1.Event) { e.InvolvedObject.Kind = "Pod" }), replica("east"), "not a Policy"},
		"reason of another cluster":  {event(func(e *corev1.Event) { e.Reason = "policy: west/check" }), replica("east"), `reason "policy: west/check"`},
		"not a compliance event":     {event(func(e *corev1.Event) { e.Reason = "PolicyStatusSync" }), replica("east"), "is not"},
		"no time":                    {event(func(e *corev1.Event) { e.LastTimestamp = metav1.Time{} }), replica("east"), "missing time"},
		"not a replica": {event(nil), &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: "policies.p"}},
			"is not a replica"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := history.FromHubEvent(tc.e, tc.replica)
			if tc.err == "" {
				if err != nil || got != want {
					t.Fatalf("FromHubEvent = %+v, %v; want %+v", got, err, want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "event east/policies.p.1") {
				t.Fatalf("FromHubEvent err = %v; want one naming the event and saying %q", err, tc.err)
			}
			// Only a well-formed event without its replica is ErrNoReplica.
			if noReplica := strings.Contains(tc.err, "no replica"); errors.Is(err, history.ErrNoReplica) != noReplica {
				t.Fatalf("errors.Is(%v, ErrNoReplica) = %v, want %v", err, !noReplica, noReplica)
			}
		})
	}
	// The replica's history entry for the same event is the same row.
	rep := replica("east")
	rep.Status.Details = []*policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: "check"},
		History: []policyv1.ComplianceHistory{{LastTimestamp: at, Message: want.Message}}}}
	if got := history.FromReplicas([]policyv1.Policy{*rep}); len(got) != 1 || got[0] != want {
		t.Fatalf("FromReplicas = %+v, want [%+v]", got, want)
	}
}
