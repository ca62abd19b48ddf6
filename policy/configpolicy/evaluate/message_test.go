package evaluate

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// The assembly rules of a template's message, as upstream's
// config-policy-controller applies them.
func TestStatusMessage(t *testing.T) {
	ev := func(key string, compliant bool, reason string, names ...string) event {
		return event{key: key, compliant: compliant, reason: reason, names: names}
	}
	for _, tc := range []struct {
		name      string
		resource  string
		events    []event
		compliant bool
		reason    string
		msg       string
	}{{
		name: "one named object", resource: "configmaps",
		events:    []event{ev("ns/a", true, ReasonFoundAsExpected)},
		compliant: true, reason: "K8s `must have` object already exists",
		msg: "configmaps [a] found as specified in namespace ns",
	}, {
		name: "cluster-scoped", resource: "namespaces",
		events: []event{ev("/prod", false, ReasonNotFoundMustExist)},
		reason: "K8s does not have a `must have` object",
		msg:    "namespaces [prod] not found",
	}, {
		name: "NonCompliant events hide the compliant ones", resource: "rolebindings",
		events: []event{ev("b/rb", false, ReasonNotFoundMustExist), ev("a/rb", false, ReasonNotFoundMustExist), ev("c/rb", true, ReasonFoundAsExpected)},
		reason: "K8s does not have a `must have` object",
		msg:    "rolebindings [rb] not found in namespaces: a, b",
	}, {
		name: "reasons in upstream's order, then by namespace text", resource: "pods",
		events: []event{ev("dev/p", false, ReasonFoundNoMatch), ev("prod/p", false, ReasonNotFoundMustExist), ev("qa/q", false, ReasonFoundNoMatch)},
		reason: "K8s does not have a `must have` object; K8s does not have a `must have` object",
		msg:    "pods [p] not found in namespace prod; pods [p] found but not as specified in namespace dev; pods [q] found but not as specified in namespace qa",
	}, {
		name: "names sharing the same namespaces are listed together", resource: "configmaps",
		events:    []event{ev("x/b", true, ReasonFoundAsExpected), ev("x/a", true, ReasonFoundAsExpected), ev("y/a", true, ReasonFoundAsExpected)},
		compliant: true, reason: "K8s `must have` object already exists",
		// "... in namespace x" sorts before "... in namespaces: x, y"
		msg: "configmaps [b] found as specified in namespace x; configmaps [a] found as specified in namespaces: x, y",
	}, {
		name: "unnamed template: matches named, no match unnamed", resource: "ingresses",
		events: []event{ev("a/", true, ReasonFoundAsExpected, "i1", "i2"), ev("b/", false, ReasonFoundNoMatch), ev("c/", false, ReasonFoundNoMatch)},
		reason: "K8s does not have a `must have` object",
		msg:    "ingresses found but not as specified in namespaces: b, c",
	}, {
		name: "enforced: created and already there", resource: "rolebindings",
		events:    []event{ev("a/rb", true, ReasonCreated), ev("b/rb", true, ReasonFoundAsExpected)},
		compliant: true, reason: "K8s `must have` object already exists; K8s creation success",
		msg: "rolebindings [rb] found as specified in namespace b; rolebindings [rb] was created successfully in namespace a",
	}, {
		name: "a reason of its own keeps its message", resource: "configmaps",
		events: []event{{key: "a/x", reason: ReasonCreateError, message: "configmaps [x] in namespace a is missing, and cannot be created, reason: `no`"},
			ev("b/x", false, ReasonNotFoundMustExist)},
		reason: "K8s does not have a `must have` object; K8s creation error",
		msg:    "configmaps [x] not found in namespace b; configmaps [x] in namespace a is missing, and cannot be created, reason: `no`",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			compliant, reason, msg := statusMessage(tc.resource, tc.events)
			require.Equal(t, tc.compliant, compliant)
			require.Equal(t, tc.reason, reason)
			require.Equal(t, tc.msg, msg)
		})
	}
}

const customPolicy = `
metadata: {name: owners, namespace: policies}
spec:
  namespaceSelector: {include: [a, b]}
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: owners}, data: {team: x}}
`

func TestCustomMessage(t *testing.T) {
	cluster := func() Cluster {
		return objects(t, "{apiVersion: v1, kind: Namespace, metadata: {name: a}}", "{apiVersion: v1, kind: Namespace, metadata: {name: b}}",
			"{apiVersion: v1, kind: ConfigMap, metadata: {name: owners, namespace: a, labels: {owner: alice}}, data: {team: x}}")
	}
	for _, tc := range []struct {
		name, compliant, noncompliant string
		full                          bool
		want                          string
	}{{
		name: "unset: the default message",
		want: "NonCompliant; violation - configmaps [owners] not found in namespace b",
	}, {
		name: "the state's template, prefixed", noncompliant: "{{ len .Policy.status.relatedObjects }} objects, see {{ .Policy.metadata.name }}",
		want: "NonCompliant; 2 objects, see owners",
	}, {
		name: "the prefix is not repeated", noncompliant: "NonCompliant; {{ .DefaultMessage | upper }}",
		want: "NonCompliant; NONCOMPLIANT; VIOLATION - CONFIGMAPS [OWNERS] NOT FOUND IN NAMESPACE B",
	}, {
		name: "the other state's template is not used", compliant: "fine",
		want: "NonCompliant; violation - configmaps [owners] not found in namespace b",
	}, {
		name: "identifiers only without a watch", noncompliant: "{{ range .Policy.status.relatedObjects }}[{{ .object.metadata.name }} {{ .object.metadata.labels }} {{ .properties }}]{{ end }}",
		want: "NonCompliant; [owners <no value> <no value>][owners <no value> <no value>]",
	}, {
		name: "whole objects with a watch", full: true,
		noncompliant: "{{ range .Policy.status.relatedObjects }}{{ .object.metadata.namespace }}:{{ with .object.metadata.labels }}{{ .owner }}{{ end }}:{{ .compliant }} {{ end }}",
		want:         "NonCompliant; a:alice:Compliant b::NonCompliant ",
	}, {
		name: "does not parse", noncompliant: "{{ .DefaultMessage",
		want: "NonCompliant; violation - configmaps [owners] not found in namespace b (failure processing the custom message: failed to parse custom template: template: custom-msg:1: unclosed action)",
	}, {
		name: "fails", noncompliant: `{{ fail "no owner" }}`,
		want: `NonCompliant; violation - configmaps [owners] not found in namespace b (failure processing the custom message: failed to execute: template: custom-msg:1:3: executing "custom-msg" at <fail "no owner">: error calling fail: no owner)`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := policy(t, customPolicy)
			p.Spec.CustomMessage = policyv1.CustomMessage{Compliant: tc.compliant, NonCompliant: tc.noncompliant}
			r := Policy(p, cluster())
			st := r.Status(nil, time.Now())
			require.Equal(t, tc.want, r.ComplianceMessage(st, tc.full))
		})
	}
}

func TestComplianceMessageCut(t *testing.T) {
	p := policy(t, customPolicy)
	p.Spec.CustomMessage.NonCompliant = `{{ nope 5000 }}`
	r := Policy(p, objects(t))
	// nope is not a function: the default message and the error.
	require.Contains(t, r.ComplianceMessage(r.Status(nil, time.Now()), false), `function "nope" not defined`)

	for _, text := range []string{strings.Repeat("x", 5000), `{{ range until 5000 }}x{{ end }}`} {
		p.Spec.CustomMessage.NonCompliant = text
		r = Policy(p, objects(t))
		got := r.ComplianceMessage(r.Status(nil, time.Now()), false)
		require.Len(t, got, MaxMessage)
		require.True(t, strings.HasPrefix(got, "NonCompliant; xxx"))
		require.True(t, strings.HasSuffix(got, "x...[truncated]"))
	}

	p.Spec.CustomMessage.NonCompliant = strings.Repeat("y", MaxMessage-len("NonCompliant; "))
	r = Policy(p, objects(t))
	require.Len(t, r.ComplianceMessage(r.Status(nil, time.Now()), false), MaxMessage, "exactly the limit is kept whole")
	require.NotContains(t, r.ComplianceMessage(r.Status(nil, time.Now()), false), "truncated")
}

// "never" adds upstream's note to the condition (and so to the message).
func TestNeverNote(t *testing.T) {
	p := policy(t, nsPolicy)
	p.Spec.EvaluationInterval = policyv1.EvaluationInterval{Compliant: "never", NonCompliant: "10s"}
	r := Policy(p, objects(t))
	st := r.Status(nil, time.Now())
	require.Equal(t, "namespaces [prod] not found", st.CompliancyDetails[0].Conditions[0].Message, "10s adds nothing")

	r = Policy(p, objects(t, "{apiVersion: v1, kind: Namespace, metadata: {name: prod}}"))
	st = r.Status(nil, time.Now())
	require.Equal(t, `namespaces [prod] found as specified. This policy will not be evaluated again due to spec.evaluationInterval.compliant being set to "never".`,
		st.CompliancyDetails[0].Conditions[0].Message)
	require.Equal(t, `Compliant; notification - namespaces [prod] found as specified. This policy will not be evaluated again due to spec.evaluationInterval.compliant being set to "never".`,
		r.ComplianceMessage(st, false))

	p.Spec.EvaluationInterval = policyv1.EvaluationInterval{NonCompliant: "never"}
	r = Policy(p, objects(t))
	require.Equal(t, `namespaces [prod] not found. This policy will not be evaluated again due to spec.evaluationInterval.noncompliant being set to "never".`,
		r.Status(nil, time.Now()).CompliancyDetails[0].Conditions[0].Message)
}

func TestUsingWatch(t *testing.T) {
	p := &policyv1.ConfigurationPolicy{}
	require.True(t, UsingWatch(p, policyv1.Compliant))
	p.Spec.EvaluationInterval = policyv1.EvaluationInterval{Compliant: "watch", NonCompliant: "30s"}
	require.True(t, UsingWatch(p, policyv1.Compliant))
	require.False(t, UsingWatch(p, policyv1.NonCompliant))
	require.False(t, UsingWatch(p, ""), "an unknown state uses the noncompliant interval")
}

// recordDiff: upstream's default redacts kinds holding sensitive data and
// templates reading Secrets; None records nothing; InStatus the diff.
func TestRecordDiff(t *testing.T) {
	cluster := func() Cluster {
		return objects(t,
			"{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {k: old}}",
			"{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: ns}, data: {k: b2xk}}",
			"{apiVersion: v1, kind: ServiceAccount, metadata: {name: sa, namespace: ns, labels: {a: old}}}")
	}
	p := policy(t, `
metadata: {name: p}
spec:
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {k: new}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: Secret, metadata: {name: s, namespace: ns}, stringData: {k: new}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ServiceAccount, metadata: {name: sa, namespace: ns, labels: {a: new}}}
  - complianceType: musthave
    recordDiff: InStatus
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {k: new}}
  - complianceType: musthave
    recordDiff: None
    objectDefinition: {apiVersion: v1, kind: ServiceAccount, metadata: {name: sa, namespace: ns, labels: {a: new}}}
  - complianceType: musthave
    recordDiff: Log
    objectDefinition: {apiVersion: v1, kind: ServiceAccount, metadata: {name: sa, namespace: ns, labels: {a: new}}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ServiceAccount, metadata: {name: sa, namespace: ns, labels: {a: '{{ fromSecret "ns" "s" "k" }}'}}}
`)
	r := Policy(p, cluster())
	diffs := make([]string, len(r.Templates))
	for i, tr := range r.Templates {
		require.Len(t, tr.Findings, 1)
		diffs[i] = tr.Findings[0].Diff
	}
	require.Equal(t, CensoredDiff, diffs[0], "ConfigMap: redacted by default")
	require.Equal(t, CensoredDiff, diffs[1], "Secret: redacted by default")
	require.Contains(t, diffs[2], "--- ns/sa : existing\n+++ ns/sa : updated\n")
	require.Contains(t, diffs[2], "-    a: old\n+    a: new")
	require.Contains(t, diffs[3], "-  k: old\n+  k: new", "InStatus shows a ConfigMap's diff")
	require.Empty(t, diffs[4], "None")
	require.Contains(t, diffs[5], "-    a: old\n+    a: new", "Log: computed for the log")
	require.Equal(t, CensoredDiff, diffs[6], "a template reading a Secret")
	for _, d := range diffs {
		require.NotContains(t, d, "b2xk", "secret data never shown")
	}
	// In the status: the diff for InStatus and the notice for redacted ones,
	// nothing for Log and None.
	inStatus := func(i int) string {
		one := p.DeepCopy()
		one.Spec.ObjectTemplates = one.Spec.ObjectTemplates[i : i+1]
		st := Policy(one, cluster()).Status(nil, time.Now())
		require.Len(t, st.RelatedObjects, 1)
		if st.RelatedObjects[0].Properties == nil {
			return ""
		}
		return st.RelatedObjects[0].Properties.Diff
	}
	require.Equal(t, CensoredDiff, inStatus(0))
	require.Equal(t, CensoredDiff, inStatus(1))
	require.Equal(t, diffs[2], inStatus(2))
	require.Empty(t, inStatus(4), "None")
	require.Empty(t, inStatus(5), "Log")
}

func TestErrorsWordedAsUpstream(t *testing.T) {
	p := policy(t, `
metadata: {name: p}
spec:
  namespaceSelector: {include: ["a["]}
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: c}}
`)
	r := Policy(p, objects(t, "{apiVersion: v1, kind: Namespace, metadata: {name: c}}"))
	st := r.Status(nil, time.Now())
	require.Equal(t, "namespaceSelector error", st.CompliancyDetails[0].Conditions[0].Reason)
	require.Equal(t, "Error filtering namespaces with provided namespaceSelector: error parsing 'include' pattern 'a[': syntax error in pattern",
		st.CompliancyDetails[0].Conditions[0].Message)
	var te *TemplateError
	require.True(t, errors.As(r.Templates[0].Error, &te), "waits for the policy to change")
	require.Equal(t, "namespaces [c] found as specified", st.CompliancyDetails[1].Conditions[0].Message)
}

// A created object whose template names a status is NonCompliant until the
// next evaluation checks the status, in upstream's words.
func TestCreatedWithStatusIsUnchecked(t *testing.T) {
	p := policy(t, `
metadata: {name: p}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: prod}, status: {phase: Active}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: dev}}
`)
	r := Policy(p, objects(t))
	for _, a := range r.Actions() {
		a.Applied = a.Action
	}
	st := r.Status(nil, time.Now())
	require.Equal(t, policyv1.NonCompliant, st.ComplianceState)
	require.Equal(t, "namespaces [prod] was created successfully, the status of the object will be verified in the next evaluation",
		st.CompliancyDetails[0].Conditions[0].Message)
	require.Equal(t, "K8s creation success, status unchecked", st.CompliancyDetails[0].Conditions[0].Reason)
	require.Equal(t, "namespaces [dev] was created successfully", st.CompliancyDetails[1].Conditions[0].Message)
	require.Equal(t, policyv1.Compliant, st.CompliancyDetails[1].ComplianceState)
	for _, ro := range st.RelatedObjects {
		if ro.Object.Metadata.Name == "prod" {
			require.Equal(t, "NonCompliant", ro.Compliant)
			require.Equal(t, "K8s creation success, status unchecked", ro.Reason)
		}
	}
}
