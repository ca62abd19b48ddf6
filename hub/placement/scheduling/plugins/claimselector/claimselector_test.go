package claimselector

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
	eu := framework.NewClusterInfo(st.Cluster("c").Label("region", "us").Claim("region", "eu").Obj(), nil)
	req := func(op metav1.LabelSelectorOperator, key string, values ...string) []metav1.LabelSelectorRequirement {
		return []metav1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}
	}
	tests := []struct {
		name  string
		exprs []metav1.LabelSelectorRequirement
		want  bool
	}{
		{"none matches all", nil, true},
		{"In on the claim, not the label", req(metav1.LabelSelectorOpIn, "region", "eu"), true},
		{"In miss", req(metav1.LabelSelectorOpIn, "region", "us"), false},
		{"Exists", req(metav1.LabelSelectorOpExists, "region"), true},
		{"missing claim", req(metav1.LabelSelectorOpExists, "platform"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(clusterv1beta1.ClusterSelector{ClaimSelector: clusterv1beta1.ClusterClaimSelector{MatchExpressions: tc.exprs}})
			require.NoError(t, err)
			assert.Equal(t, tc.want, p.Filter(eu).IsSuccess())
		})
	}
}
