package agent

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// MaxHistory is the most history entries a template's details keep.
const MaxHistory = 10

// TemplateState is what the framework knows about one template of a replica.
type TemplateState struct {
	// Name of the template object.
	Name string
	// Compliance is the template's own status.compliant ("" while unevaluated),
	// or Pending while its dependencies are not met.
	Compliance policyv1.ComplianceState
	// IgnorePending leaves a Pending template out of the policy's compliance.
	IgnorePending bool
	// Changed is when the template's engine last changed its state, as its
	// own status history says (zero when it says nothing).
	Changed time.Time
}

// EventReason is the reason of a template's compliance events on its policy.
func EventReason(namespace, template string) string {
	return "policy: " + namespace + "/" + template
}

// Status is a replica's status from its templates and the compliance events
// recorded on it in namespace: per template, the history newest first (at most
// MaxHistory) and the template's compliance; overall NonCompliant when any
// template is, else Pending when any counted template is, else Compliant when
// every counted template is, else "" (not reported yet).
func Status(namespace, policy string, templates []TemplateState, events []corev1.Event) (policyv1.ComplianceState, []*policyv1.DetailsPerTemplate) {
	byReason := map[string][]corev1.Event{}
	for _, e := range events {
		if e.InvolvedObject.Kind != "Policy" || e.InvolvedObject.Name != policy || e.Namespace != namespace {
			continue
		}
		byReason[e.Reason] = append(byReason[e.Reason], e)
	}
	var details []*policyv1.DetailsPerTemplate
	counted, compliant, pending, noncompliant := 0, 0, 0, 0
	for _, t := range templates {
		evs := byReason[EventReason(namespace, t.Name)]
		sort.SliceStable(evs, func(i, j int) bool {
			ti, tj := preciseTime(evs[i]), preciseTime(evs[j])
			if !ti.Equal(tj) {
				return tj.Before(ti)
			}
			return evs[i].Name > evs[j].Name
		})
		if len(evs) > MaxHistory {
			evs = evs[:MaxHistory]
		}
		d := &policyv1.DetailsPerTemplate{TemplateMeta: metav1.ObjectMeta{Name: t.Name}, ComplianceState: t.Compliance}
		for _, e := range evs {
			d.History = append(d.History, policyv1.ComplianceHistory{LastTimestamp: eventTime(e), Message: e.Message, EventName: e.Name})
		}
		details = append(details, d)
		if t.Compliance == policyv1.Pending && t.IgnorePending {
			continue
		}
		counted++
		switch t.Compliance {
		case policyv1.Compliant:
			compliant++
		case policyv1.Pending:
			pending++
		case policyv1.NonCompliant:
			noncompliant++
		}
	}
	switch {
	case noncompliant > 0:
		return policyv1.NonCompliant, details
	case pending > 0:
		return policyv1.Pending, details
	case counted > 0 && compliant == counted:
		return policyv1.Compliant, details
	case counted == 0 && len(templates) > 0:
		return policyv1.Compliant, details // every template is pending and ignored
	}
	return "", details
}

// preciseTime is when a compliance event happened, to the microsecond where
// it tells (history.PreciseTime: its eventTime, or the creation time its name
// carries, within its whole-second time).
func preciseTime(e corev1.Event) time.Time {
	return history.PreciseTime(eventTime(e).Time, e.Name, e.EventTime.Time).Truncate(time.Microsecond)
}

func eventTime(e corev1.Event) metav1.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp
	}
	if !e.EventTime.IsZero() {
		return metav1.NewTime(e.EventTime.Time)
	}
	return e.CreationTimestamp
}

// Dependency is one dependency of a template with the state it has now.
type Dependency struct {
	policyv1.PolicyDependency
	// Current is the dependency's status.compliant; "" when it does not exist.
	Current policyv1.ComplianceState
}

// Unmet returns a message naming the dependencies not in the state they must
// reach, or "" when all are met.
func Unmet(deps []Dependency) string {
	var bad []string
	for _, d := range deps {
		if d.Current == d.Compliance {
			continue
		}
		cur := string(d.Current)
		if cur == "" {
			cur = "not found"
		}
		name := d.Name
		if d.Namespace != "" {
			name = d.Namespace + "/" + d.Name
		}
		bad = append(bad, fmt.Sprintf("%s %s is %s, not %s", d.Kind, name, cur, d.Compliance))
	}
	if len(bad) == 0 {
		return ""
	}
	return "Pending; dependencies not satisfied: " + strings.Join(bad, ", ")
}

// DependencyTarget is where a dependency lives on the managed cluster: a
// Policy dependency is the replica <namespace>.<name> in the cluster namespace
// (namespace defaulting to the root policy's), any other kind is name in the
// cluster namespace.
func DependencyTarget(d policyv1.PolicyDependency, rootNamespace string) (kind, name string) {
	if d.Kind == "Policy" || d.Kind == "" {
		ns := d.Namespace
		if ns == "" {
			ns = rootNamespace
		}
		return "Policy", ns + "." + d.Name
	}
	return d.Kind, d.Name
}

// EventState is the compliance state a compliance event's message states by
// its prefix: Compliant, Pending, otherwise NonCompliant.
func EventState(msg string) policyv1.ComplianceState {
	switch {
	case strings.HasPrefix(msg, "Compliant;"), msg == "Compliant":
		return policyv1.Compliant
	case strings.HasPrefix(msg, "Pending;"), msg == "Pending":
		return policyv1.Pending
	}
	return policyv1.NonCompliant
}

// Lagging names the first template whose own status already says a state
// its newest compliance event does not (the engine writes the status, then
// the event): a status written now would pair the new state with the old
// history. "" when every template's history agrees with its state.
func Lagging(templates []TemplateState, details []*policyv1.DetailsPerTemplate) string {
	for i, t := range templates {
		if t.Compliance == "" || i >= len(details) || details[i] == nil || len(details[i].History) == 0 {
			continue
		}
		if EventState(details[i].History[0].Message) != t.Compliance {
			return t.Name
		}
	}
	return ""
}

// Unheard names the first template whose engine changed its state less than
// window before now while none of its compliance events is seen yet: its
// first event is on its way (the engine writes the status, then the event),
// and a status written now would show the state with no history at all. A
// state older than window with no event (events expire) is not waited for.
// "" when there is none.
func Unheard(templates []TemplateState, details []*policyv1.DetailsPerTemplate, now time.Time, window time.Duration) string {
	for i, t := range templates {
		if t.Compliance == "" || t.Changed.IsZero() || now.Sub(t.Changed) >= window || i >= len(details) || details[i] == nil {
			continue
		}
		if len(details[i].History) == 0 {
			return t.Name
		}
	}
	return ""
}
