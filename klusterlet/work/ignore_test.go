package work_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	workv1 "open-cluster-management.io/api/work/v1"
)

// editCM changes a ConfigMap on the managed cluster as another actor would
// (its own field manager).
func editCM(t *testing.T, ns, name string, f func(cm *corev1.ConfigMap)) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := getCM(t, ns, name)
		require.NoError(t, err)
		f(cm)
		_, err = spoke1.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{FieldManager: "someone-else"})
		return err
	}))
}

// TestIgnoreFields: serverSideApply.ignoreFields leave fields to the managed
// cluster, as OCM: OnSpokePresent ones once the object exists, OnSpokeChange
// ones while the manifest is unchanged.
func TestIgnoreFields(t *testing.T) {
	ctx := context.Background()
	_, err := spoke1.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ignore"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ssa := func(name string, fields ...workv1.IgnoreField) workv1.ManifestConfigOption {
		return strategy(cmID("ignore", name), workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply,
			ServerSideApply: &workv1.ServerSideApplyConfig{Force: true, IgnoreFields: fields}})
	}

	t.Run("OnSpokePresent: set at creation, then the cluster's", func(t *testing.T) {
		cm := func(p, label string) map[string]interface{} {
			return labelled(configMap("ignore", "present", map[string]interface{}{"p": p, "q": "1"}), map[string]interface{}{"rev": label})
		}
		newWork(t, "cluster1", "present", cm("1", "a")).config(ssa("present", workv1.IgnoreField{
			Condition: workv1.IgnoreFieldsConditionOnSpokePresent, JSONPaths: []string{".data.p"}})).create(t)
		waitApplied(t, "cluster1", "present")
		got, err := getCM(t, "ignore", "present")
		require.NoError(t, err)
		assert.Equal(t, "1", got.Data["p"], "set when created")

		editCM(t, "ignore", "present", func(cm *corev1.ConfigMap) { cm.Data["p"] = "5" })
		setManifest(t, "cluster1", "present", 0, cm("2", "b")) // p changes too: ignored
		eventuallyCM(t, "ignore", "present", func(cm *corev1.ConfigMap, err error) bool { return err == nil && cm.Labels["rev"] == "b" }, "the new manifest applied")
		got, err = getCM(t, "ignore", "present")
		require.NoError(t, err)
		assert.Equal(t, "5", got.Data["p"], "the cluster's value stays")
		assert.Equal(t, "1", got.Data["q"])
		deleteWork(t, "cluster1", "present")
	})

	t.Run("OnSpokeChange: kept while the manifest is unchanged, applied when it changes", func(t *testing.T) {
		cm := func(a string) map[string]interface{} {
			return configMap("ignore", "change", map[string]interface{}{"a": a, "b": "1"})
		}
		newWork(t, "cluster1", "change", cm("1")).config(ssa("change", workv1.IgnoreField{
			Condition: workv1.IgnoreFieldsConditionOnSpokeChange, JSONPointers: []string{"/data/a"}})).create(t)
		waitApplied(t, "cluster1", "change")
		editCM(t, "ignore", "change", func(cm *corev1.ConfigMap) { cm.Data["a"], cm.Data["b"] = "9", "2" })
		eventuallyCM(t, "ignore", "change", func(cm *corev1.ConfigMap, err error) bool { return err == nil && cm.Data["b"] == "1" }, "drift of b repaired")
		got, err := getCM(t, "ignore", "change")
		require.NoError(t, err)
		assert.Equal(t, "9", got.Data["a"], "the repair keeps the cluster's a")

		setManifest(t, "cluster1", "change", 0, cm("3"))
		eventuallyCM(t, "ignore", "change", func(cm *corev1.ConfigMap, err error) bool { return err == nil && cm.Data["a"] == "3" }, "a changed manifest is applied, a included")
		deleteWork(t, "cluster1", "change")
	})

	t.Run("an unusable entry fails the manifest with OCM's reason", func(t *testing.T) {
		newWork(t, "cluster1", "bad-ignore", configMap("ignore", "bad", map[string]interface{}{"a": "1"})).config(ssa("bad",
			workv1.IgnoreField{Condition: workv1.IgnoreFieldsConditionOnSpokePresent, JQPathExpressions: []string{".data["}})).create(t)
		got := eventuallyWork(t, "cluster1", "bad-ignore", func(w *workv1.ManifestWork) bool {
			c := manifestCond(w, 0, "Applied")
			return c != nil && c.Status == "False"
		}, "refused")
		c := manifestCond(got, 0, "Applied")
		assert.Equal(t, workv1.AppliedManifestSSAIgnoreFieldError, c.Reason)
		assert.Contains(t, c.Message, `ignoreFields jqPathExpression ".data["`)
		deleteWork(t, "cluster1", "bad-ignore")
	})
}
