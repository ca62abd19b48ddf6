package agent

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/ocm"
)

// HubEvents forwards every compliance event of the replica's templates (more
// than the status keeps), on the hub replica, at whole seconds, with names
// that depend only on template, time and message.
func TestHubEvents(t *testing.T) {
	r := EventReason("c1", "cfg")
	rep := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "p.a", Namespace: "c1", UID: "uid-1"}}
	var many []corev1.Event
	for i := 0; i < 12; i++ {
		many = append(many, ev(fmt.Sprintf("e%02d", i), r, fmt.Sprintf("NonCompliant; %d", i), i, "p.a"))
	}
	subSecond := ev("late", r, "Compliant; fixed", 20, "p.a")
	subSecond.LastTimestamp = metav1.NewTime(subSecond.LastTimestamp.Add(400 * time.Millisecond))
	templates := []TemplateState{{Name: "cfg"}}
	cases := map[string]struct {
		events []corev1.Event
		want   int
	}{
		"all of them, not ten":       {many, 12},
		"other policies and reasons": {[]corev1.Event{ev("x", r, "NonCompliant; x", 1, "p.b"), ev("y", "policy: c1/other", "NonCompliant; y", 1, "p.a"), ev("z", "PolicyStatusSync", "z", 1, "p.a")}, 0},
		"none":                       {nil, 0},
		"whole seconds":              {[]corev1.Event{subSecond}, 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := HubEvents("c1", rep, templates, tc.events)
			assert.Len(t, got, tc.want)
			names := map[string]bool{}
			for _, e := range got {
				assert.Equal(t, "c1", e.Namespace)
				assert.Equal(t, corev1.ObjectReference{APIVersion: policyv1.GroupVersion.String(), Kind: "Policy", Namespace: "c1", Name: "p.a", UID: "uid-1"}, e.InvolvedObject)
				assert.Equal(t, "true", e.Labels[ocm.HistoryLabel])
				assert.Equal(t, r, e.Reason)
				assert.Zero(t, e.LastTimestamp.Nanosecond(), "time in whole seconds, as the replica's history")
				assert.False(t, names[e.Name], "names are distinct")
				names[e.Name] = true
			}
		})
	}
	// The same event seen again (another copy, an agent restart) has the same name.
	again := many[3]
	again.Name = "renamed"
	a, b := HubEvents("c1", rep, templates, many[3:4]), HubEvents("c1", rep, templates, []corev1.Event{again})
	assert.Equal(t, a[0].Name, b[0].Name)
	assert.Equal(t, time.Unix(1020, 0).UTC(), HubEvents("c1", rep, templates, []corev1.Event{subSecond})[0].LastTimestamp.UTC())

	// The microsecond the engine's Event name carries goes in eventTime, so
	// that the hub orders a NonCompliant and its remediation within one
	// second; the same message twice in one second names two hub Events.
	sec := time.Unix(1030, 0)
	named := func(at time.Time, msg string) corev1.Event {
		e := ev(fmt.Sprintf("p.a.%x", at.UnixNano()), r, msg, 30, "p.a")
		return e
	}
	flips := []corev1.Event{named(sec.Add(100*time.Millisecond), "Compliant; ok"), named(sec.Add(300*time.Millisecond), "NonCompliant; gone"),
		named(sec.Add(700*time.Millisecond), "Compliant; ok")}
	got := HubEvents("c1", rep, templates, flips)
	assert.Len(t, got, 3)
	at := map[string]time.Duration{}
	for _, e := range got {
		assert.Equal(t, sec, e.LastTimestamp.Time, "lastTimestamp in whole seconds")
		assert.NotEmpty(t, e.ReportingController)
		assert.NotEmpty(t, e.ReportingInstance)
		assert.Equal(t, ForwardAction, e.Action)
		at[e.Name] = e.EventTime.Sub(sec)
	}
	assert.ElementsMatch(t, []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond}, []time.Duration{at[got[0].Name], at[got[1].Name], at[got[2].Name]})
	// The replica's status lists them newest first by that microsecond.
	_, details := Status("c1", "p.a", templates, []corev1.Event{flips[2], flips[0], flips[1]})
	assert.Equal(t, []string{"Compliant; ok", "NonCompliant; gone", "Compliant; ok"},
		[]string{details[0].History[0].Message, details[0].History[1].Message, details[0].History[2].Message})
	assert.Equal(t, flips[2].Name, details[0].History[0].EventName)
}
