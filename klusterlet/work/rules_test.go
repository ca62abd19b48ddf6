package work_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	workv1 "open-cluster-management.io/api/work/v1"
)

func condStatus(conds []metav1.Condition, typ string) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return c.Status
	}
	return ""
}

// TestConditionRulesCompleteStopsUpdates: a CEL rule makes a manifest, then
// the work, Complete; a complete manifest is no longer updated.
func TestConditionRulesCompleteStopsUpdates(t *testing.T) {
	ctx := context.Background()
	_, err := spoke1.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rules"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	newWork(t, "cluster1", "finishing", configMap("rules", "task", map[string]interface{}{"v": "1"})).config(workv1.ManifestConfigOption{
		ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "rules", Name: "task"},
		ConditionRules: []workv1.ConditionRule{{Type: workv1.CelConditionExpressionsType, Condition: workv1.ManifestComplete,
			CelExpressions:    []string{`has(object.metadata.annotations) && "done" in object.metadata.annotations && object.metadata.annotations["done"] == "yes"`},
			MessageExpression: `result ? "task finished" : "task running"`}},
	}).create(t)
	got := eventuallyWork(t, "cluster1", "finishing", func(w *workv1.ManifestWork) bool {
		c := manifestCond(w, 0, "Complete")
		return c != nil && c.Status == "False" && condStatus(w.Status.Conditions, "Complete") == "False"
	}, "not complete yet")
	assert.Equal(t, "task running", manifestCond(got, 0, "Complete").Message)
	assert.Equal(t, workv1.ConditionRuleEvaluated, manifestCond(got, 0, "Complete").Reason)

	cm, err := getCM(t, "rules", "task")
	require.NoError(t, err)
	cm.Annotations = map[string]string{"done": "yes"}
	_, err = spoke1.CoreV1().ConfigMaps("rules").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	got = eventuallyWork(t, "cluster1", "finishing", func(w *workv1.ManifestWork) bool {
		return condStatus(w.Status.Conditions, "Complete") == "True"
	}, "the work is complete")
	assert.Equal(t, "task finished", meta.FindStatusCondition(got.Status.Conditions, "Complete").Message)

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := getWork(t, "cluster1", "finishing")
		w.Spec.Workload.Manifests[0] = manifest(t, configMap("rules", "task", map[string]interface{}{"v": "2"}))
		return hub.Update(ctx, w)
	}))
	eventuallyWork(t, "cluster1", "finishing", func(w *workv1.ManifestWork) bool {
		c := manifestCond(w, 0, "Applied")
		return c != nil && c.ObservedGeneration == w.Generation && w.Generation == 2
	}, "generation 2 seen")
	cm, err = getCM(t, "rules", "task")
	require.NoError(t, err)
	assert.Equal(t, "1", cm.Data["v"], "a complete manifest is not updated")
	deleteWork(t, "cluster1", "finishing")
}

// TestConditionRulesRollout: well-known Progressing and Degraded rules on a
// Deployment read its rollout on the hub, per manifest and for the work. The
// control plane runs the deployment controller but no node, so a replica
// never becomes available and the rollout passes its progress deadline.
func TestConditionRulesRollout(t *testing.T) {
	ctx := context.Background()
	_, err := spoke1.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rollout"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	dep := func(replicas int, image string) map[string]interface{} {
		return map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]interface{}{"name": "web", "namespace": "rollout"},
			"spec": map[string]interface{}{"replicas": replicas, "progressDeadlineSeconds": 2,
				"selector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": "web"}},
				"template": map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]interface{}{"app": "web"}},
					"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{"name": "c", "image": image}}}}}}
	}
	newWork(t, "cluster1", "rollout", dep(0, "nginx:1")).config(workv1.ManifestConfigOption{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: "rollout", Name: "web"},
		ConditionRules: []workv1.ConditionRule{
			{Type: workv1.WellKnownConditionsType, Condition: workv1.ManifestProgressing},
			{Type: workv1.WellKnownConditionsType, Condition: workv1.ManifestDegraded},
		},
	}).create(t)
	got := eventuallyWork(t, "cluster1", "rollout", func(w *workv1.ManifestWork) bool {
		return condStatus(w.Status.Conditions, "Progressing") == "False" && condStatus(w.Status.Conditions, "Degraded") == "False"
	}, "no replica to roll out: done, not degraded")
	assert.Equal(t, "Deployment is rolled out", manifestCond(got, 0, "Progressing").Message)

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := getWork(t, "cluster1", "rollout")
		w.Spec.Workload.Manifests[0] = manifest(t, dep(1, "nginx:2"))
		return hub.Update(ctx, w)
	}))
	// A new template: a rollout, which cannot finish and passes its deadline.
	got = eventuallyWork(t, "cluster1", "rollout", func(w *workv1.ManifestWork) bool {
		return condStatus(w.Status.Conditions, "Degraded") == "True" && condStatus(w.Status.Conditions, "Progressing") == "True"
	}, "the rollout cannot finish and passes its deadline")
	assert.Contains(t, meta.FindStatusCondition(got.Status.Conditions, "Progressing").Message, "Deployment is rolling out: 1 of 1 replicas updated, 0 available")
	assert.Contains(t, meta.FindStatusCondition(got.Status.Conditions, "Degraded").Message, "has timed out progressing")
	assert.Equal(t, workv1.ConditionRuleEvaluated, manifestCond(got, 0, "Degraded").Reason)

	// Removing the rules removes their conditions.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := getWork(t, "cluster1", "rollout")
		w.Spec.ManifestConfigs = nil
		return hub.Update(ctx, w)
	}))
	eventuallyWork(t, "cluster1", "rollout", func(w *workv1.ManifestWork) bool {
		return meta.FindStatusCondition(w.Status.Conditions, "Degraded") == nil && manifestCond(w, 0, "Progressing") == nil &&
			condStatus(w.Status.Conditions, "Applied") == "True"
	}, "rule conditions gone")
	deleteWork(t, "cluster1", "rollout")
}
