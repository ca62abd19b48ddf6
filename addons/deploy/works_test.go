package deploy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
)

func cm(name string, size int) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: map[string]string{"d": strings.Repeat("x", size)}}
}

func TestRenderSplitsPastTheLimit(t *testing.T) {
	r, err := Render("a", "c1", []runtime.Object{cm("one", 400), cm("two", 400), cm("three", 400)}, 1000, nil)
	require.NoError(t, err)
	require.Len(t, r.Deploy, 2)
	assert.Equal(t, "addon-a-deploy-0", r.Deploy[0].Name)
	assert.Equal(t, "addon-a-deploy-1", r.Deploy[1].Name)
	assert.Len(t, r.Deploy[0].Spec.Workload.Manifests, 2)
	assert.Len(t, r.Deploy[1].Spec.Workload.Manifests, 1)
	assert.Equal(t, "c1", r.Deploy[0].Namespace)
	assert.Equal(t, "a", r.Deploy[0].Labels["open-cluster-management.io/addon-name"])
	assert.Nil(t, r.PreDelete)
}

func TestRenderRefusesBadManifests(t *testing.T) {
	_, err := Render("a", "c1", []runtime.Object{cm("big", 5000)}, 1000, nil)
	assert.ErrorContains(t, err, "manifest 0 (ConfigMap big)")
	_, err = Render("a", "c1", []runtime.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nokind"}}}, 1000, nil)
	assert.ErrorContains(t, err, "has no kind")
	_, err = Render("a", "c1", []runtime.Object{nil}, 1000, nil)
	assert.ErrorContains(t, err, "manifest 0 is nil")
}

func TestRenderSeparatesThePreDeleteHook(t *testing.T) {
	job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "cleanup", Namespace: "ns", Labels: map[string]string{"open-cluster-management.io/addon-pre-delete": ""}}}
	r, err := Render("a", "c1", []runtime.Object{cm("one", 1), job}, 1000, nil)
	require.NoError(t, err)
	require.Len(t, r.Deploy, 1)
	assert.Len(t, r.Deploy[0].Spec.Workload.Manifests, 1)
	require.NotNil(t, r.PreDelete)
	assert.Equal(t, "addon-a-pre-delete", r.PreDelete.Name)
	require.Len(t, r.PreDelete.Spec.ManifestConfigs, 1)
	assert.Equal(t, workv1.ResourceIdentifier{Group: "batch", Resource: "jobs", Name: "cleanup", Namespace: "ns"}, r.PreDelete.Spec.ManifestConfigs[0].ResourceIdentifier)
}

func TestHookDone(t *testing.T) {
	withValue := func(v workv1.FeedbackValue) *workv1.ManifestWork {
		return &workv1.ManifestWork{Status: workv1.ManifestWorkStatus{ResourceStatus: workv1.ManifestResourceStatus{Manifests: []workv1.ManifestCondition{
			{StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{v}}}}}}}
	}
	assert.False(t, HookDone(nil))
	assert.False(t, HookDone(&workv1.ManifestWork{}))
	assert.True(t, HookDone(withValue(workv1.FeedbackValue{Name: "succeeded", Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To[int64](1)}})))
	assert.False(t, HookDone(withValue(workv1.FeedbackValue{Name: "succeeded", Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To[int64](0)}})))
	assert.True(t, HookDone(withValue(workv1.FeedbackValue{Name: "phase", Value: workv1.FieldValue{Type: workv1.String, String: ptr.To("Succeeded")}})))
	assert.False(t, HookDone(withValue(workv1.FeedbackValue{Name: "phase", Value: workv1.FieldValue{Type: workv1.String, String: ptr.To("Running")}})))
}

func TestRenderOrphansNamespaces(t *testing.T) {
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "addons"}}
	r, err := Render("a", "c1", []runtime.Object{ns, cm("one", 1)}, 1000, nil)
	require.NoError(t, err)
	require.NotNil(t, r.Deploy[0].Spec.DeleteOption)
	assert.Equal(t, workv1.DeletePropagationPolicyTypeSelectivelyOrphan, r.Deploy[0].Spec.DeleteOption.PropagationPolicy)
	assert.Equal(t, []workv1.OrphaningRule{{Resource: "namespaces", Name: "addons"}}, r.Deploy[0].Spec.DeleteOption.SelectivelyOrphan.OrphaningRules)
}
