package agent

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

func ev(name, reason, msg string, at int, policy string) corev1.Event {
	return corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "c1"}, Reason: reason, Message: msg,
		InvolvedObject: corev1.ObjectReference{Kind: "Policy", Name: policy},
		LastTimestamp:  metav1.NewTime(time.Unix(int64(1000+at), 0))}
}

func TestStatus(t *testing.T) {
	r := EventReason("c1", "cfg")
	many := []corev1.Event{}
	for i := 0; i < 12; i++ {
		many = append(many, ev(fmt.Sprintf("e%02d", i), r, fmt.Sprint(i), i, "p.a"))
	}
	cases := []struct {
		name      string
		templates []TemplateState
		events    []corev1.Event
		want      policyv1.ComplianceState
		history   []string
	}{
		{"no report yet", []TemplateState{{Name: "cfg"}}, nil, "", nil},
		{"noncompliant, newest first", []TemplateState{{Name: "cfg", Compliance: policyv1.NonCompliant}},
			[]corev1.Event{ev("a", r, "old", 1, "p.a"), ev("b", r, "new", 2, "p.a"), ev("x", r, "other policy", 3, "p.b"), ev("y", "policy: c1/other", "other template", 4, "p.a")},
			policyv1.NonCompliant, []string{"new", "old"}},
		{"at most ten", []TemplateState{{Name: "cfg", Compliance: policyv1.Compliant}}, many, policyv1.Compliant,
			[]string{"11", "10", "9", "8", "7", "6", "5", "4", "3", "2"}},
		{"noncompliant wins over pending", []TemplateState{{Name: "cfg", Compliance: policyv1.Pending}, {Name: "b", Compliance: policyv1.NonCompliant}}, nil, policyv1.NonCompliant, nil},
		{"pending", []TemplateState{{Name: "cfg", Compliance: policyv1.Pending}, {Name: "b", Compliance: policyv1.Compliant}}, nil, policyv1.Pending, nil},
		{"ignorePending", []TemplateState{{Name: "cfg", Compliance: policyv1.Pending, IgnorePending: true}, {Name: "b", Compliance: policyv1.Compliant}}, nil, policyv1.Compliant, nil},
		{"one unevaluated", []TemplateState{{Name: "cfg", Compliance: policyv1.Compliant}, {Name: "b"}}, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, details := Status("c1", "p.a", c.templates, c.events)
			assert.Equal(t, c.want, got)
			assert.Len(t, details, len(c.templates))
			var msgs []string
			for _, h := range details[0].History {
				msgs = append(msgs, h.Message)
			}
			assert.Equal(t, c.history, msgs)
		})
	}
}

func TestUnmet(t *testing.T) {
	dep := func(kind, ns, name string, want, cur policyv1.ComplianceState) Dependency {
		return Dependency{PolicyDependency: policyv1.PolicyDependency{TypeMeta: metav1.TypeMeta{Kind: kind}, Name: name, Namespace: ns, Compliance: want}, Current: cur}
	}
	assert.Equal(t, "", Unmet(nil))
	assert.Equal(t, "", Unmet([]Dependency{dep("Policy", "", "a", policyv1.Compliant, policyv1.Compliant)}))
	assert.Equal(t, "Pending; dependencies not satisfied: Policy p/a is not found, not Compliant, ConfigurationPolicy b is NonCompliant, not Compliant",
		Unmet([]Dependency{dep("Policy", "p", "a", policyv1.Compliant, ""), dep("ConfigurationPolicy", "", "b", policyv1.Compliant, policyv1.NonCompliant)}))
}

func TestDependencyTarget(t *testing.T) {
	k, n := DependencyTarget(policyv1.PolicyDependency{TypeMeta: metav1.TypeMeta{Kind: "Policy"}, Name: "a"}, "root")
	assert.Equal(t, []string{"Policy", "root.a"}, []string{k, n})
	k, n = DependencyTarget(policyv1.PolicyDependency{TypeMeta: metav1.TypeMeta{Kind: "Policy"}, Name: "a", Namespace: "x"}, "root")
	assert.Equal(t, []string{"Policy", "x.a"}, []string{k, n})
	k, n = DependencyTarget(policyv1.PolicyDependency{TypeMeta: metav1.TypeMeta{Kind: "ConfigurationPolicy"}, Name: "c"}, "root")
	assert.Equal(t, []string{"ConfigurationPolicy", "c"}, []string{k, n})
}

func TestLagging(t *testing.T) {
	h := func(msgs ...string) *policyv1.DetailsPerTemplate {
		d := &policyv1.DetailsPerTemplate{}
		for _, m := range msgs {
			d.History = append(d.History, policyv1.ComplianceHistory{Message: m})
		}
		return d
	}
	cases := []struct {
		name      string
		templates []TemplateState
		details   []*policyv1.DetailsPerTemplate
		want      string
	}{
		{"agrees", []TemplateState{{Name: "a", Compliance: policyv1.Compliant}}, []*policyv1.DetailsPerTemplate{h("Compliant; ok", "NonCompliant; x")}, ""},
		{"event still on its way", []TemplateState{{Name: "a", Compliance: policyv1.Compliant}}, []*policyv1.DetailsPerTemplate{h("NonCompliant; violation - x")}, "a"},
		{"no event yet", []TemplateState{{Name: "a", Compliance: policyv1.Compliant}}, []*policyv1.DetailsPerTemplate{h()}, ""},
		{"not evaluated", []TemplateState{{Name: "a"}}, []*policyv1.DetailsPerTemplate{h("NonCompliant; x")}, ""},
		{"pending agrees", []TemplateState{{Name: "a", Compliance: policyv1.Pending}, {Name: "b", Compliance: policyv1.NonCompliant}},
			[]*policyv1.DetailsPerTemplate{h("Pending; dependencies not satisfied"), h("NonCompliant; template-error; x")}, ""},
		{"second lags", []TemplateState{{Name: "a", Compliance: policyv1.Pending}, {Name: "b", Compliance: policyv1.NonCompliant}},
			[]*policyv1.DetailsPerTemplate{h("Pending; x"), h("Compliant; y")}, "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, Lagging(c.templates, c.details)) })
	}
	assert.Equal(t, policyv1.Compliant, EventState("Compliant; notification - x"))
	assert.Equal(t, policyv1.NonCompliant, EventState("NonCompliant; Compliant; x"))
	assert.Equal(t, policyv1.Pending, EventState("Pending; x"))
}

// Unheard: a state the engine set moments ago whose first event is not seen
// yet is waited for; an old one (its events expired) is not.
func TestUnheard(t *testing.T) {
	now := time.Unix(5000, 0)
	h := func(msgs ...string) *policyv1.DetailsPerTemplate {
		d := &policyv1.DetailsPerTemplate{}
		for _, m := range msgs {
			d.History = append(d.History, policyv1.ComplianceHistory{Message: m})
		}
		return d
	}
	cases := []struct {
		name      string
		templates []TemplateState
		details   []*policyv1.DetailsPerTemplate
		want      string
	}{
		{"first event on its way", []TemplateState{{Name: "a", Compliance: policyv1.NonCompliant, Changed: now.Add(-time.Second)}}, []*policyv1.DetailsPerTemplate{h()}, "a"},
		{"event seen", []TemplateState{{Name: "a", Compliance: policyv1.NonCompliant, Changed: now.Add(-time.Second)}}, []*policyv1.DetailsPerTemplate{h("NonCompliant; x")}, ""},
		{"events expired long ago", []TemplateState{{Name: "a", Compliance: policyv1.NonCompliant, Changed: now.Add(-time.Hour)}}, []*policyv1.DetailsPerTemplate{h()}, ""},
		{"engine says not when", []TemplateState{{Name: "a", Compliance: policyv1.NonCompliant}}, []*policyv1.DetailsPerTemplate{h()}, ""},
		{"not evaluated", []TemplateState{{Name: "a", Changed: now}}, []*policyv1.DetailsPerTemplate{h()}, ""},
		{"second unheard", []TemplateState{{Name: "a", Compliance: policyv1.Compliant, Changed: now}, {Name: "b", Compliance: policyv1.Compliant, Changed: now}},
			[]*policyv1.DetailsPerTemplate{h("Compliant; ok"), h()}, "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, Unheard(c.templates, c.details, now, maxEventLag)) })
	}
}
