package ops

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"
)

var worksNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func cond(typ string, st metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg}
}

func sampleWorks() []workv1.ManifestWork {
	m := workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`)}}
	return []workv1.ManifestWork{
		{
			ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "web", CreationTimestamp: metav1.NewTime(worksNow.Add(-3 * time.Minute))},
			Spec:       workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{m, m, m}}},
			Status: workv1.ManifestWorkStatus{
				Conditions: []metav1.Condition{
					cond("Applied", "True", "AppliedManifestWorkComplete", "Apply manifest work complete"),
					cond("Available", "True", "ResourcesAvailable", "All resources are available"),
				},
				ResourceStatus: workv1.ManifestResourceStatus{Manifests: []workv1.ManifestCondition{
					{ResourceMeta: workv1.ManifestResourceMeta{Ordinal: 0, Kind: "Namespace", Name: "web"},
						Conditions: []metav1.Condition{cond("Applied", "True", "", ""), cond("Available", "True", "", "")}},
					{ResourceMeta: workv1.ManifestResourceMeta{Ordinal: 1, Kind: "Deployment", Namespace: "web", Name: "web"},
						Conditions: []metav1.Condition{cond("Applied", "True", "", ""), cond("Available", "True", "", "")},
						StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
							{Name: "Replicas", Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To[int64](2)}},
							{Name: "phase", Value: workv1.FieldValue{Type: workv1.String, String: ptr.To("Running")}},
						}}},
					{ResourceMeta: workv1.ManifestResourceMeta{Ordinal: 2, Kind: "Widget", Namespace: "web", Name: "w"},
						Conditions: []metav1.Condition{cond("Applied", "False", "AppliedManifestFailed", `no matches for kind "Widget"`), cond("Available", "Unknown", "", "")}},
				}},
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Namespace: "cluster2", Name: "web", CreationTimestamp: metav1.NewTime(worksNow.Add(-49 * time.Hour))},
			Spec:       workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{m}}},
		},
	}
}

func TestPrintWorksTable(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, PrintWorks(&out, "table", sampleWorks(), worksNow))
	want := "" +
		"CLUSTER    NAME   MANIFESTS   APPLIED   AVAILABLE   AGE\n" +
		"cluster1   web    3           True      True        3m\n" +
		"cluster2   web    1           Unknown   Unknown     2d1h\n"
	assert.Equal(t, want, out.String())
}

func TestPrintWorksJSONAndYAML(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		var out bytes.Buffer
		require.NoError(t, PrintWorks(&out, format, sampleWorks(), worksNow))
		got := &workv1.ManifestWorkList{}
		if format == "json" {
			require.NoError(t, json.Unmarshal(out.Bytes(), got))
		} else {
			require.NoError(t, yaml.Unmarshal(out.Bytes(), got))
		}
		require.Len(t, got.Items, 2, format)
		assert.Equal(t, "ManifestWork", got.Items[0].Kind)
		assert.Equal(t, "cluster2", got.Items[1].Namespace)
	}
}

func TestPrintWork(t *testing.T) {
	w := sampleWorks()[0]
	var out bytes.Buffer
	require.NoError(t, PrintWork(&out, "table", &w))
	want := "" +
		"Work:      web\n" +
		"Cluster:   cluster1\n" +
		"Manifests: 3\n" +
		"Applied:   True (AppliedManifestWorkComplete) Apply manifest work complete\n" +
		"Available: True (ResourcesAvailable) All resources are available\n" +
		"\n" +
		"#   KIND         NAMESPACE   NAME   APPLIED   AVAILABLE   FEEDBACK                   MESSAGE\n" +
		"0   Namespace                web    True      True                                 \n" +
		"1   Deployment   web         web    True      True        Replicas=2,phase=Running   \n" +
		"2   Widget       web         w      False     Unknown                                no matches for kind \"Widget\"\n"
	assert.Equal(t, trimLines(want), trimLines(out.String()))

	// A work that keeps an object another work also carries: the conflict
	// shows although everything is True.
	kept := sampleWorks()[0]
	kept.Status.Conditions = append(kept.Status.Conditions, metav1.Condition{Type: "Conflict", Status: metav1.ConditionTrue,
		Reason: "ManifestConflict", Message: "1 of 3 manifests are also in another ManifestWork with different content: manifest 0 (Namespace web)"})
	kept.Status.ResourceStatus.Manifests[0].Conditions = append(kept.Status.ResourceStatus.Manifests[0].Conditions,
		metav1.Condition{Type: "Conflict", Status: metav1.ConditionTrue, Reason: "ManifestConflict", Message: "Namespace web is also in ManifestWork cluster1/other"})
	out.Reset()
	require.NoError(t, PrintWork(&out, "table", &kept))
	assert.Contains(t, out.String(), "Conflict:  True (ManifestConflict) 1 of 3 manifests are also in another ManifestWork")
	assert.Regexp(t, `(?m)^0 +Namespace +web +True +True +Namespace web is also in ManifestWork cluster1/other$`, trimLines(out.String()))

	w2 := sampleWorks()[1]
	out.Reset()
	require.NoError(t, PrintWork(&out, "table", &w2))
	assert.Contains(t, out.String(), "Applied:   Unknown (no status yet: is the cluster's agent running?)")

	out.Reset()
	require.NoError(t, PrintWork(&out, "yaml", &w))
	got := &workv1.ManifestWork{}
	require.NoError(t, yaml.Unmarshal(out.Bytes(), got))
	assert.Equal(t, "web", got.Name)
	assert.Len(t, got.Status.ResourceStatus.Manifests, 3)
}

// trimLines drops trailing spaces, which tabwriter pads empty last cells with.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.Join(lines, "\n")
}
