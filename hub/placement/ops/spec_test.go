package ops

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

func TestSpec(t *testing.T) {
	s, err := Spec(CreateOptions{Labels: map[string]string{"env": "prod"}, Claims: map[string]string{"region": "eu"},
		CEL: []string{`managedCluster.metadata.name != ""`}, Prioritizers: []string{"BuiltIn:ResourceAllocatableCPU:2", "AddOn:load:free:-3"},
		Exact: true, SortByScore: true, ScoreRateLimit: "5m"})
	require.NoError(t, err)
	require.Len(t, s.Predicates, 1)
	sel := s.Predicates[0].RequiredClusterSelector
	assert.Equal(t, map[string]string{"env": "prod"}, sel.LabelSelector.MatchLabels)
	assert.Equal(t, []metav1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu"}}}, sel.ClaimSelector.MatchExpressions)
	assert.Equal(t, []string{`managedCluster.metadata.name != ""`}, sel.CelSelector.CelExpressions)
	assert.Equal(t, clusterv1beta1.PrioritizerPolicyModeExact, s.PrioritizerPolicy.Mode)
	require.Len(t, s.PrioritizerPolicy.Configurations, 2)
	assert.Equal(t, "ResourceAllocatableCPU", s.PrioritizerPolicy.Configurations[0].ScoreCoordinate.BuiltIn)
	assert.Equal(t, &clusterv1beta1.AddOnScore{ResourceName: "load", ScoreName: "free"}, s.PrioritizerPolicy.Configurations[1].ScoreCoordinate.AddOn)
	assert.EqualValues(t, -3, s.PrioritizerPolicy.Configurations[1].Weight)
	assert.Equal(t, clusterv1beta1.PlacementSortByScore, s.SortBy)
	assert.Equal(t, "5m", s.ScoreRateLimit)

	for _, tc := range []struct {
		name string
		opts CreateOptions
		want string
	}{
		{"prioritizer form", CreateOptions{Prioritizers: []string{"Steady:1"}}, `--prioritizers "Steady:1": want BuiltIn:NAME:WEIGHT`},
		{"prioritizer weight", CreateOptions{Prioritizers: []string{"BuiltIn:Steady:11"}}, "the weight must be a whole number from -10 to 10"},
		{"unknown prioritizer, named as the hub would", CreateOptions{Prioritizers: []string{"BuiltIn:Fastest:1"}}, `unknown prioritizer "Fastest"`},
		{"CEL", CreateOptions{CEL: []string{"1 +"}}, "spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[0]"},
		{"rate limit", CreateOptions{ScoreRateLimit: "5 minutes"}, `--score-rate-limit "5 minutes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Spec(tc.opts)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
