package apply

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
)

func deploymentObj() map[string]interface{} {
	return map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": "web", "namespace": "app", "annotations": map[string]interface{}{"a/b": "x"}},
		"spec": map[string]interface{}{"replicas": int64(3), "template": map[string]interface{}{"spec": map[string]interface{}{
			"containers": []interface{}{
				map[string]interface{}{"name": "web", "image": "nginx", "resources": map[string]interface{}{"limits": map[string]interface{}{"cpu": "1"}}},
				map[string]interface{}{"name": "sidecar", "image": "envoy"},
			}}}}}
}

func TestRemoveFields(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		field workv1.IgnoreField
		check func(t *testing.T, o map[string]interface{})
		err   string
	}{
		{"jsonPath", workv1.IgnoreField{JSONPaths: []string{".spec.replicas"}}, func(t *testing.T, o map[string]interface{}) {
			_, found, _ := unstructured.NestedFieldNoCopy(o, "spec", "replicas")
			assert.False(t, found)
		}, ""},
		{"jsonPath through a list", workv1.IgnoreField{JSONPaths: []string{".spec.template.spec.containers[*].image"}}, func(t *testing.T, o map[string]interface{}) {
			cs, _, _ := unstructured.NestedSlice(o, "spec", "template", "spec", "containers")
			for _, c := range cs {
				assert.NotContains(t, c, "image")
				assert.Contains(t, c, "name")
			}
		}, ""},
		{"jsonPath that finds nothing", workv1.IgnoreField{JSONPaths: []string{".spec.nothing.here"}}, func(t *testing.T, o map[string]interface{}) {
			assert.Equal(t, deploymentObj(), o)
		}, ""},
		{"jsonPointer with an escaped key", workv1.IgnoreField{JSONPointers: []string{"/metadata/annotations/a~1b"}}, func(t *testing.T, o map[string]interface{}) {
			ann, _, _ := unstructured.NestedStringMap(o, "metadata", "annotations")
			assert.Empty(t, ann)
		}, ""},
		{"jsonPointer into a list item", workv1.IgnoreField{JSONPointers: []string{"/spec/template/spec/containers/1/image"}}, func(t *testing.T, o map[string]interface{}) {
			cs, _, _ := unstructured.NestedSlice(o, "spec", "template", "spec", "containers")
			assert.Contains(t, cs[0], "image")
			assert.NotContains(t, cs[1], "image")
		}, ""},
		{"jsonPointer at a list item is refused", workv1.IgnoreField{JSONPointers: []string{"/spec/template/spec/containers/1"}}, nil, "points at a list item"},
		{"jsonPointer without a slash", workv1.IgnoreField{JSONPointers: []string{"spec/replicas"}}, nil, "must start with /"},
		{"jq select", workv1.IgnoreField{JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "sidecar") | .image`}}, func(t *testing.T, o map[string]interface{}) {
			cs, _, _ := unstructured.NestedSlice(o, "spec", "template", "spec", "containers")
			assert.Equal(t, "nginx", cs[0].(map[string]interface{})["image"])
			assert.NotContains(t, cs[1], "image")
			r, _, _ := unstructured.NestedInt64(o, "spec", "replicas")
			assert.EqualValues(t, 3, r, "numbers stay int64")
		}, ""},
		{"jq that does not parse", workv1.IgnoreField{JQPathExpressions: []string{`.spec[`}}, nil, `ignoreFields jqPathExpression ".spec["`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := RemoveFields(ctx, deploymentObj(), []workv1.IgnoreField{tc.field})
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				var ife *IgnoreFieldError
				assert.ErrorAs(t, err, &ife)
				assert.Equal(t, workv1.AppliedManifestSSAIgnoreFieldError, ife.Reason())
				return
			}
			require.NoError(t, err)
			tc.check(t, out)
		})
	}
}

func TestRestoreIgnored(t *testing.T) {
	ctx := context.Background()
	fields := []workv1.IgnoreField{{JSONPaths: []string{".spec.replicas"}, JSONPointers: []string{"/spec/template/spec/containers/1/image"}}}
	live := deploymentObj()
	_ = unstructured.SetNestedField(live, int64(7), "spec", "replicas")
	liveWithout, err := RemoveFields(ctx, (&unstructured.Unstructured{Object: live}).DeepCopy().Object, fields)
	require.NoError(t, err)
	desired := deploymentObj()
	_ = unstructured.SetNestedField(desired, "nginx:2", "spec", "template", "spec", "containers", "0", "image") // not a real path: ignored
	body, err := RemoveFields(ctx, desired, fields)
	require.NoError(t, err)
	got := restoreIgnored(body, live, liveWithout).(map[string]interface{})
	r, _, _ := unstructured.NestedInt64(got, "spec", "replicas")
	assert.EqualValues(t, 7, r, "the live value of an ignored field is kept")
	cs, _, _ := unstructured.NestedSlice(got, "spec", "template", "spec", "containers")
	assert.Equal(t, "envoy", cs[1].(map[string]interface{})["image"])
	assert.NotContains(t, got, "status")
}
