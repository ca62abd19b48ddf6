package status

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"
)

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(y), &u.Object))
	return u
}

func intValue(name string, i int64) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(i)}}
}
func strValue(name, s string) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(s)}}
}
func boolValue(name string, b bool) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Boolean, Boolean: ptr.To(b)}}
}
func rawValue(name, s string) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: ptr.To(s)}}
}

var wellKnownRule = []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}

func paths(p ...workv1.JsonPath) []workv1.FeedbackRule {
	return []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: p}}
}

func TestFeedback(t *testing.T) {
	cases := []struct {
		name    string
		obj     string
		rules   []workv1.FeedbackRule
		want    []workv1.FeedbackValue
		wantErr string
	}{
		{"deployment well-known",
			"apiVersion: apps/v1\nkind: Deployment\nstatus: {replicas: 3, readyReplicas: 2, availableReplicas: 1}",
			wellKnownRule,
			[]workv1.FeedbackValue{intValue("ReadyReplicas", 2), intValue("Replicas", 3), intValue("AvailableReplicas", 1)}, ""},
		{"deployment without status yet reports what exists",
			"apiVersion: apps/v1\nkind: Deployment\nstatus: {replicas: 1}",
			wellKnownRule, []workv1.FeedbackValue{intValue("Replicas", 1)}, ""},
		{"job well-known",
			"apiVersion: batch/v1\nkind: Job\nstatus: {succeeded: 1, conditions: [{type: Complete, status: 'True'}]}",
			wellKnownRule, []workv1.FeedbackValue{strValue("JobComplete", "True"), intValue("JobSucceeded", 1)}, ""},
		{"daemonset well-known",
			"apiVersion: apps/v1\nkind: DaemonSet\nstatus: {numberReady: 2, desiredNumberScheduled: 3, numberAvailable: 2, currentNumberScheduled: 3, updatedNumberScheduled: 3}",
			wellKnownRule,
			[]workv1.FeedbackValue{intValue("NumberReady", 2), intValue("DesiredNumberScheduled", 3), intValue("NumberAvailable", 2),
				intValue("CurrentNumberScheduled", 3), intValue("UpdatedNumberScheduled", 3)}, ""},
		{"pod well-known",
			"apiVersion: v1\nkind: Pod\nstatus: {phase: Running, conditions: [{type: Ready, status: 'True'}, {type: Initialized, status: 'True'}]}",
			wellKnownRule, []workv1.FeedbackValue{strValue("PodPhase", "Running"), strValue("PodReady", "True")}, ""},
		{"well-known on a kind without rules",
			"apiVersion: v1\nkind: ConfigMap", wellKnownRule, nil, "kind ConfigMap has no well-known status values"},
		{"jsonpaths of every type",
			"apiVersion: example.com/v1\nkind: Widget\nspec: {size: 3, color: blue, enabled: true, tags: [a, b], nested: {x: 1}}",
			paths(workv1.JsonPath{Name: "size", Path: ".spec.size"}, workv1.JsonPath{Name: "color", Path: ".spec.color"},
				workv1.JsonPath{Name: "enabled", Path: ".spec.enabled"}, workv1.JsonPath{Name: "tags", Path: ".spec.tags"},
				workv1.JsonPath{Name: "nested", Path: ".spec.nested"}),
			[]workv1.FeedbackValue{intValue("size", 3), strValue("color", "blue"), boolValue("enabled", true),
				rawValue("tags", `["a","b"]`), rawValue("nested", `{"x":1}`)}, ""},
		{"jsonpath missing value is an error, found ones still reported",
			"apiVersion: v1\nkind: ConfigMap\ndata: {a: b}",
			paths(workv1.JsonPath{Name: "a", Path: ".data.a"}, workv1.JsonPath{Name: "gone", Path: ".data.gone"}),
			[]workv1.FeedbackValue{strValue("a", "b")}, "gone: path .data.gone has no value"},
		{"invalid jsonpath",
			"apiVersion: v1\nkind: ConfigMap",
			paths(workv1.JsonPath{Name: "bad", Path: ".data[?("}), nil, "bad: invalid path"},
		{"jsonpath with several matches",
			"apiVersion: v1\nkind: Pod\nstatus: {conditions: [{type: A, status: 'True'}, {type: B, status: 'False'}]}",
			paths(workv1.JsonPath{Name: "all", Path: ".status.conditions[*].status"}), nil, "more than one value"},
		{"both rule types",
			"apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: 2}\nstatus: {replicas: 2}",
			append(wellKnownRule, paths(workv1.JsonPath{Name: "desired", Path: ".spec.replicas"})...),
			[]workv1.FeedbackValue{intValue("Replicas", 2), intValue("desired", 2)}, ""},
		{"a value named twice is kept once, the first, and reported",
			"apiVersion: v1\nkind: ConfigMap\ndata: {a: one, b: two}",
			append(paths(workv1.JsonPath{Name: "k", Path: ".data.a"}), paths(workv1.JsonPath{Name: "k", Path: ".data.b"})...),
			[]workv1.FeedbackValue{strValue("k", "one")}, "k: more than one rule names this value; the first is kept"},
		{"a well-known name repeated by a jsonpath",
			"apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: 5}\nstatus: {replicas: 2}",
			append(wellKnownRule, paths(workv1.JsonPath{Name: "Replicas", Path: ".spec.replicas"})...),
			[]workv1.FeedbackValue{intValue("Replicas", 2)}, "Replicas: more than one rule names this value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Feedback(object(t, tc.obj), tc.rules)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestFeedbackJSONRawLimit(t *testing.T) {
	big := make([]interface{}, 400)
	for i := range big {
		big[i] = "xxxx"
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{"kind": "X", "spec": map[string]interface{}{"big": big}}}
	_, err := Feedback(u, paths(workv1.JsonPath{Name: "big", Path: ".spec.big"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than the 1024 allowed")
}

func TestFeedbackStringLimit(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"kind": "X", "data": map[string]interface{}{
		"big": strings.Repeat("s", MaxStringLength+1), "fits": strings.Repeat("s", MaxStringLength)}}}
	_, err := Feedback(u, paths(workv1.JsonPath{Name: "big", Path: ".data.big"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "string of 4097 bytes, more than the 4096 allowed")
	got, err := Feedback(u, paths(workv1.JsonPath{Name: "fits", Path: ".data.fits"}))
	require.NoError(t, err)
	require.Len(t, got, 1)
}
