package ops

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	"sigs.k8s.io/yaml"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
	"flotilla.dev/flotilla/hub/workreplicaset"
)

func sampleReplicaSets() []ReplicaSet {
	web := &workv1alpha1.ManifestWorkReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", Annotations: map[string]string{distv1alpha1.PolicyAnnotation: "regions"}},
		Spec:       workv1alpha1.ManifestWorkReplicaSetSpec{PlacementRefs: []workv1alpha1.LocalPlacementReference{{Name: "all"}}},
		Status: workv1alpha1.ManifestWorkReplicaSetStatus{
			Summary:    workv1alpha1.ManifestWorkReplicaSetSummary{Total: 3, DesiredTotal: 3, Applied: 3, Available: 2},
			Conditions: []metav1.Condition{cond(workreplicaset.ConditionDistributionPolicyApplied, "False", workreplicaset.ReasonRenderFailed, "us-1 ...")},
		},
	}
	policy := &distv1alpha1.DistributionPolicy{Status: distv1alpha1.DistributionPolicyStatus{ReplicaSets: []distv1alpha1.ReplicaSetStatus{
		{Name: "other"},
		{Name: "web", Overrides: []distv1alpha1.OverrideCount{{Rule: "eu-image", Clusters: 2}},
			Workloads: []distv1alpha1.WorkloadStatus{{Group: "apps", Kind: "Deployment", Namespace: "apps", Name: "web", Desired: 30, Clusters: 3, ReadyReplicas: 28, AvailableReplicas: 27}}},
	}}}
	plain := &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "plain"},
		Spec: workv1alpha1.ManifestWorkReplicaSetSpec{PlacementRefs: []workv1alpha1.LocalPlacementReference{{Name: "a"}, {Name: "b"}}}}
	return []ReplicaSet{ReplicaSetView(plain, nil), ReplicaSetView(web, policy)}
}

func TestPrintReplicaSetsTable(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, PrintReplicaSets(&b, "table", sampleReplicaSets()))
	assert.Equal(t, `NAMESPACE   NAME    PLACEMENTS   CLUSTERS   APPLIED   AVAILABLE   POLICY                   REPLICAS
apps        plain   a,b          0/0        0         0           -                        -
apps        web     all          3/3        3         2           regions (RenderFailed)   deployment/web 28/27/30
`, b.String())
}

func TestPrintReplicaSetsJSONAndYAML(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		var b bytes.Buffer
		require.NoError(t, PrintReplicaSets(&b, format, sampleReplicaSets()))
		var got ReplicaSetList
		if format == "json" {
			require.NoError(t, json.Unmarshal(b.Bytes(), &got))
		} else {
			require.NoError(t, yaml.Unmarshal(b.Bytes(), &got))
		}
		require.Len(t, got.Items, 2)
		web := got.Items[1]
		assert.Equal(t, "regions", web.Policy)
		require.Len(t, web.Workloads, 1)
		assert.Equal(t, int64(28), web.Workloads[0].ReadyReplicas)
		assert.Equal(t, int64(30), web.Workloads[0].Desired)
		assert.Equal(t, []distv1alpha1.OverrideCount{{Rule: "eu-image", Clusters: 2}}, web.Overrides)
		assert.Equal(t, workreplicaset.ReasonRenderFailed, web.PolicyApplied.Reason)
	}
	var b bytes.Buffer
	require.NoError(t, PrintReplicaSets(&b, "json", nil))
	assert.Contains(t, b.String(), `"items": []`)
}
