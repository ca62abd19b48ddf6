package labelselector

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

func TestFilter(t *testing.T) {
	prod := framework.NewClusterInfo(st.Cluster("c").Label("env", "prod").Obj(), nil)
	tests := []struct {
		name string
		sel  metav1.LabelSelector
		want bool
	}{
		{"empty matches all", metav1.LabelSelector{}, true},
		{"matchLabels hit", metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}, true},
		{"matchLabels miss", metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}, false},
		{"NotIn", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"prod"}}}}, false},
		{"DoesNotExist", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "gpu", Operator: metav1.LabelSelectorOpDoesNotExist}}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(clusterv1beta1.ClusterSelector{LabelSelector: tc.sel})
			require.NoError(t, err)
			assert.Equal(t, tc.want, p.Filter(prod).IsSuccess())
		})
	}
	_, err := New(clusterv1beta1.ClusterSelector{LabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpIn}}}})
	assert.ErrorContains(t, err, "labelSelector")
}
