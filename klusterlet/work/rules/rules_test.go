package rules

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
)

func obj(apiVersion, kind string, fields map[string]interface{}) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]interface{}{"name": "x", "namespace": "ns", "generation": int64(2)}}}
	for k, v := range fields {
		u.Object[k] = v
	}
	return u
}

func cond(typ, status string) map[string]interface{} {
	return map[string]interface{}{"type": typ, "status": status, "reason": "R", "message": typ + " " + status}
}

func deployment(replicas, observed, updated, available, total int64, conds ...interface{}) *unstructured.Unstructured {
	return obj("apps/v1", "Deployment", map[string]interface{}{
		"spec": map[string]interface{}{"replicas": replicas},
		"status": map[string]interface{}{"observedGeneration": observed, "updatedReplicas": updated,
			"availableReplicas": available, "replicas": total, "conditions": conds}})
}

func TestEvaluate(t *testing.T) {
	cel := func(condition string, exprs ...string) workv1.ConditionRule {
		return workv1.ConditionRule{Type: workv1.CelConditionExpressionsType, Condition: condition, CelExpressions: exprs}
	}
	known := func(condition string) workv1.ConditionRule {
		return workv1.ConditionRule{Type: workv1.WellKnownConditionsType, Condition: condition}
	}
	jobDone := obj("batch/v1", "Job", map[string]interface{}{"status": map[string]interface{}{"conditions": []interface{}{cond("Complete", "True")}}})
	jobFailed := obj("batch/v1", "Job", map[string]interface{}{"status": map[string]interface{}{"conditions": []interface{}{
		map[string]interface{}{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}}}})
	jobRunning := obj("batch/v1", "Job", map[string]interface{}{"status": map[string]interface{}{}})
	cm := obj("v1", "ConfigMap", map[string]interface{}{"data": map[string]interface{}{"ready": "yes"}})

	for _, tc := range []struct {
		name          string
		live          *unstructured.Unstructured
		rule          workv1.ConditionRule
		want          metav1.ConditionStatus
		reason        string
		message       string
		noCondition   bool
		messageSubstr string
	}{
		{name: "job complete", live: jobDone, rule: known("Complete"), want: "True", reason: workv1.ConditionRuleEvaluated, message: "Job is finished"},
		{name: "failed job is complete too", live: jobFailed, rule: known("Complete"), want: "True", message: "Job is finished"},
		{name: "running job", live: jobRunning, rule: known("Complete"), want: "False", message: "Job is not finished"},
		{name: "failed job is degraded", live: jobFailed, rule: known("Degraded"), want: "True", message: "Job failed: BackoffLimitExceeded"},
		{name: "pod succeeded", live: obj("v1", "Pod", map[string]interface{}{"status": map[string]interface{}{"phase": "Succeeded"}}), rule: known("Complete"), want: "True", message: "Pod is in phase Succeeded"},
		{name: "pod without phase", live: obj("v1", "Pod", nil), rule: known("Complete"), want: "False", message: "Pod has no phase yet"},
		{name: "deployment rolled out", live: deployment(3, 2, 3, 3, 3), rule: known("Progressing"), want: "False", message: "Deployment is rolled out"},
		{name: "deployment not observed yet", live: deployment(3, 1, 3, 3, 3), rule: known("Progressing"), want: "True"},
		{name: "deployment rolling", live: deployment(3, 2, 1, 2, 4), rule: known("Progressing"), want: "True",
			message: "Deployment is rolling out: 1 of 3 replicas updated, 2 available"},
		{name: "deployment past its deadline", live: deployment(3, 2, 1, 2, 4, map[string]interface{}{"type": "Progressing", "status": "False",
			"reason": "ProgressDeadlineExceeded", "message": `ReplicaSet "web-1" has timed out progressing.`}),
			rule: known("Degraded"), want: "True", message: `Deployment is degraded: ReplicaSet "web-1" has timed out progressing.`},
		{name: "healthy deployment is not degraded", live: deployment(3, 2, 3, 3, 3, cond("Progressing", "True")), rule: known("Degraded"), want: "False"},
		{name: "well-known condition unknown for the kind: nothing, as in OCM", live: cm, rule: known("Complete"), noCondition: true},
		{name: "CEL true, default message", live: cm, rule: cel("Ready", `object.data.ready == "yes"`), want: "True", message: "Manifest is Ready"},
		{name: "CEL expressions are ANDed", live: cm, rule: cel("Ready", `true`, `object.data.ready == "no"`), want: "False", message: "Manifest is not Ready"},
		{name: "CEL message and messageExpression", live: cm, rule: workv1.ConditionRule{Type: "CEL", Condition: "Ready", CelExpressions: []string{"true"},
			Message: "static", MessageExpression: `result ? "ready: " + object.data.ready : ""`}, want: "True", message: "ready: yes"},
		{name: "empty messageExpression falls back to message", live: cm, rule: workv1.ConditionRule{Type: "CEL", Condition: "Ready", CelExpressions: []string{"false"},
			Message: "static", MessageExpression: `result ? "yes" : ""`}, want: "False", message: "static"},
		{name: "CEL that does not compile", live: cm, rule: cel("Ready", `object.data.ready ==`), want: "False", reason: workv1.ConditionRuleExpressionError,
			messageSubstr: "does not compile"},
		{name: "CEL that fails on the object", live: cm, rule: cel("Ready", `object.status.phase == "x"`), want: "False", reason: workv1.ConditionRuleExpressionError,
			messageSubstr: "no such key"},
		{name: "CEL not boolean", live: cm, rule: cel("Ready", `object.data.ready`), want: "False", reason: workv1.ConditionRuleExpressionError,
			messageSubstr: "must evaluate to a bool"},
		{name: "CEL rule without expressions", live: cm, rule: cel("Ready"), want: "Unknown", reason: workv1.ConditionRuleInvalid},
		{name: "unknown rule type", live: cm, rule: workv1.ConditionRule{Type: "Magic", Condition: "Ready"}, want: "Unknown", reason: workv1.ConditionRuleInvalid,
			messageSubstr: `"Magic" is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Evaluate(tc.live, []workv1.ConditionRule{tc.rule})
			if tc.noCondition {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			c := got[0]
			assert.Equal(t, tc.rule.Condition, c.Type)
			assert.Equal(t, tc.want, c.Status, c.Message)
			assert.True(t, FromRule(c))
			if tc.reason != "" {
				assert.Equal(t, tc.reason, c.Reason)
			}
			if tc.message != "" {
				assert.Equal(t, tc.message, c.Message)
			}
			assert.Contains(t, c.Message, tc.messageSubstr)
		})
	}
}

func TestAggregate(t *testing.T) {
	m := func(conds ...metav1.Condition) workv1.ManifestCondition {
		return workv1.ManifestCondition{Conditions: conds}
	}
	rc := func(typ string, st metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: workv1.ConditionRuleEvaluated, Message: typ + " " + string(st)}
	}
	applied := metav1.Condition{Type: "Applied", Status: "True", Reason: "AppliedManifestComplete"}
	got := Aggregate([]workv1.ManifestCondition{
		m(applied, rc("Progressing", "False"), rc("Complete", "True"), rc("Degraded", "False")),
		m(applied, rc("Progressing", "True"), rc("Complete", "True")),
		m(applied, rc("Ready", "Unknown")),
	}, 7)
	byType := map[string]metav1.Condition{}
	for _, c := range got {
		byType[c.Type] = c
		assert.Equal(t, ReasonAggregated, c.Reason)
		assert.EqualValues(t, 7, c.ObservedGeneration)
	}
	assert.Len(t, got, 4, "only rule conditions are aggregated")
	assert.Equal(t, metav1.ConditionTrue, byType["Progressing"].Status, "any manifest progressing")
	assert.Equal(t, metav1.ConditionTrue, byType["Complete"].Status, "all complete")
	assert.Equal(t, "Aggregated from 2 manifest conditions: 2 True, 0 False, 0 Unknown", byType["Complete"].Message)
	assert.Equal(t, metav1.ConditionFalse, byType["Degraded"].Status)
	assert.Equal(t, "Degraded False", byType["Degraded"].Message, "one manifest: its message")
	assert.Equal(t, metav1.ConditionUnknown, byType["Ready"].Status)

	got = Aggregate([]workv1.ManifestCondition{m(rc("Complete", "True")), m(rc("Complete", "False")), m(rc("Progressing", "Unknown"), rc("Progressing", "False"))}, 1)
	assert.Equal(t, metav1.ConditionFalse, got[0].Status, "Complete: one False wins")
	assert.Equal(t, metav1.ConditionUnknown, got[1].Status, "Progressing: none True, one Unknown")
	assert.Empty(t, Aggregate([]workv1.ManifestCondition{m(applied)}, 1))
}

func TestWellKnownWithoutStatus(t *testing.T) {
	for _, tc := range []struct{ apiVersion, kind, condition string }{
		{"batch/v1", "Job", "Complete"}, {"batch/v1", "Job", "Degraded"}, {"v1", "Pod", "Complete"},
		{"apps/v1", "Deployment", "Progressing"}, {"apps/v1", "Deployment", "Degraded"},
	} {
		got := Evaluate(obj(tc.apiVersion, tc.kind, nil), []workv1.ConditionRule{{Type: workv1.WellKnownConditionsType, Condition: tc.condition}})
		require.Len(t, got, 1)
		assert.Equal(t, workv1.ConditionRuleEvaluated, got[0].Reason, "%s %s: %s", tc.kind, tc.condition, got[0].Message)
	}
}
