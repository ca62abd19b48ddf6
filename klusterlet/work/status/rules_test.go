package status

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

func ruleCond(typ string, st metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: typ, Status: st, Reason: workv1.ConditionRuleEvaluated, Message: typ}
}

func TestRuleConditions(t *testing.T) {
	job := rmeta(0, "Job", "ns", "j")
	dep := rmeta(1, "Deployment", "ns", "d")
	pass1 := Build(workv1.ManifestWorkStatus{}, []ManifestResult{
		{Meta: job, Availability: Exists, RulesEvaluated: true, Rules: []metav1.Condition{ruleCond("Complete", "False")}},
		{Meta: dep, Availability: Exists, RulesEvaluated: true, Rules: []metav1.Condition{ruleCond("Progressing", "True"), ruleCond("Degraded", "False")}},
	}, 1)
	check(t, pass1.ResourceStatus.Manifests[0].Conditions, "Complete", want{"False", workv1.ConditionRuleEvaluated, "Complete"})
	check(t, pass1.Conditions, "Progressing", want{"True", "ConditionRulesAggregated", "Progressing"})
	check(t, pass1.Conditions, "Degraded", want{"False", "ConditionRulesAggregated", ""})
	check(t, pass1.Conditions, "Complete", want{"False", "ConditionRulesAggregated", ""})
	check(t, pass1.Conditions, "Applied", want{"True", "AppliedManifestWorkComplete", ""})
	assert.False(t, Completed(pass1, job))

	// The job finished, the deployment's rollout is done, and its Degraded
	// rule was removed from the work (generation 2).
	pass2 := Build(pass1, []ManifestResult{
		{Meta: job, Availability: Exists, RulesEvaluated: true, Rules: []metav1.Condition{ruleCond("Complete", "True")}},
		{Meta: dep, Availability: Exists, RulesEvaluated: true, Rules: []metav1.Condition{ruleCond("Progressing", "False")}},
	}, 2)
	check(t, pass2.Conditions, "Complete", want{"True", "ConditionRulesAggregated", ""})
	check(t, pass2.Conditions, "Progressing", want{"False", "ConditionRulesAggregated", ""})
	check(t, pass2.Conditions, "Degraded", want{})
	check(t, pass2.ResourceStatus.Manifests[1].Conditions, "Degraded", want{})
	assert.True(t, Completed(pass2, job), "the work is complete")
	assert.EqualValues(t, 2, meta.FindStatusCondition(pass2.ResourceStatus.Manifests[0].Conditions, "Complete").ObservedGeneration)

	// The object could not be read: rule conditions of this generation stay,
	// older ones go.
	pass3 := Build(pass2, []ManifestResult{{Meta: job, Availability: Unknown}, {Meta: dep, Availability: Unknown}}, 2)
	check(t, pass3.ResourceStatus.Manifests[0].Conditions, "Complete", want{"True", workv1.ConditionRuleEvaluated, ""})
	pass4 := Build(pass2, []ManifestResult{{Meta: job, Availability: Unknown}, {Meta: dep, Availability: Unknown}}, 3)
	check(t, pass4.ResourceStatus.Manifests[0].Conditions, "Complete", want{})
	check(t, pass4.Conditions, "Complete", want{})
}

func TestCompletedPerManifest(t *testing.T) {
	job := rmeta(0, "Job", "ns", "j")
	st := workv1.ManifestWorkStatus{ResourceStatus: workv1.ManifestResourceStatus{Manifests: []workv1.ManifestCondition{
		{ResourceMeta: job, Conditions: []metav1.Condition{ruleCond("Complete", "True")}}}}}
	moved := job
	moved.Ordinal = 3
	assert.True(t, Completed(st, moved), "matched by identity, not by position")
	assert.False(t, Completed(st, rmeta(0, "Job", "ns", "other")))
}
