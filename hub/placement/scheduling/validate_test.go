package scheduling_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling"
	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

func TestValidate(t *testing.T) {
	labelExpr := func(op metav1.LabelSelectorOperator, values ...string) clusterv1beta1.ClusterSelector {
		return clusterv1beta1.ClusterSelector{LabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: op, Values: values}}}}
	}
	claimExpr := func(key string, op metav1.LabelSelectorOperator, values ...string) clusterv1beta1.ClusterSelector {
		return clusterv1beta1.ClusterSelector{ClaimSelector: clusterv1beta1.ClusterClaimSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}}
	}
	for _, tc := range []struct {
		name string
		p    *clusterv1beta1.Placement
		want []string // substrings, one per problem
	}{
		{"valid", st.Placement("p", "ns").Labels(map[string]string{"env": "prod"}).Claim("region", "eu").CEL(`managedCluster.metadata.name != ""`).
			Prioritizer("ResourceAllocatableCPU", 2).AddOnScore("load", "free", 1).Group("canary", map[string]string{"canary": "true"}).Group("rest", nil).PerGroup("25%").Obj(), nil},
		{"label selector operator", st.Placement("p", "ns").Predicate(labelExpr("Maybe", "a")).Obj(),
			[]string{`spec.predicates[0].requiredClusterSelector.labelSelector: "Maybe" is not a valid label selector operator`}},
		{"label selector In without values", st.Placement("p", "ns").Predicate(labelExpr(metav1.LabelSelectorOpIn)).Obj(),
			[]string{"spec.predicates[0].requiredClusterSelector.labelSelector: values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"}},
		{"bad label key", st.Placement("p", "ns").Labels(map[string]string{"not a key!": "x"}).Obj(),
			[]string{"spec.predicates[0].requiredClusterSelector.labelSelector:"}},
		{"claim selector", st.Placement("p", "ns").Labels(nil).Predicate(claimExpr("region", metav1.LabelSelectorOpExists, "eu")).Obj(),
			[]string{"spec.predicates[1].requiredClusterSelector.claimSelector"}},
		{"CEL that does not compile", st.Placement("p", "ns").CEL(`managedCluster.metadata.name ==`).Obj(),
			[]string{"spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[0]", "does not compile"}},
		{"CEL that is not boolean", st.Placement("p", "ns").CEL(`size(managedCluster.metadata) + 1`).Obj(),
			[]string{"spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[0]", "must evaluate to a bool"}},
		{"negative numberOfClusters", st.Placement("p", "ns").Number(-1).Obj(), []string{"spec.numberOfClusters must not be negative, got -1"}},
		{"unknown built-in prioritizer, even when scores are not needed", st.Placement("p", "ns").Prioritizer("Fastest", 1).Obj(),
			[]string{`spec.prioritizerPolicy.configurations[0].scoreCoordinate.builtIn: unknown prioritizer "Fastest" (known: Balance, ResourceAllocatableCPU, ResourceAllocatableMemory, Steady)`}},
		{"addon coordinate without names", st.Placement("p", "ns").AddOnScore("", "free", 1).Obj(),
			[]string{"spec.prioritizerPolicy.configurations[0].scoreCoordinate.addOn needs resourceName and scoreName"}},
		{"duplicate decision group names", st.Placement("p", "ns").Group("canary", nil).Group("prod", nil).Group("canary", nil).Obj(),
			[]string{`spec.decisionStrategy.groupStrategy.decisionGroups[2].groupName "canary" is already the name of decisionGroups[0]`}},
		{"decision group without a name", st.Placement("p", "ns").Group("", nil).Obj(),
			[]string{"spec.decisionStrategy.groupStrategy.decisionGroups[0].groupName is required"}},
		{"clustersPerDecisionGroup", st.Placement("p", "ns").PerGroup("150%").Obj(),
			[]string{`spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup "150%" must be a percentage from 1% to 100%`}},
		{"every problem is listed", st.Placement("p", "ns").CEL(`1 +`).Prioritizer("Fastest", 1).Group("a", nil).Group("a", nil).Obj(),
			[]string{"celExpressions[0]", "Fastest", `groupName "a"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scheduling.DefaultRegistry().Validate(tc.p)
			if tc.want == nil {
				assert.Empty(t, got)
				return
			}
			all := strings.Join(got, "\n")
			for _, w := range tc.want {
				assert.Contains(t, all, w)
			}
		})
	}
}
