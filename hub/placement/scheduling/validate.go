package scheduling

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// Validate returns every problem that would make the Placement misconfigured,
// each naming its field: predicates whose label selector, claim selector or
// CEL expressions the selector plugins refuse (a bad operator, key or value; an
// expression that does not compile or is not boolean), a negative
// numberOfClusters, an unknown prioritizer mode, type or built-in name (listed
// whether or not scores are needed now), weights outside -10..10, decision
// groups with an invalid selector or a name used twice, and a
// clustersPerDecisionGroup that is not a positive count or 1%..100%. It needs
// no snapshot: the admission webhook calls it, so such Placements are refused
// at create and update instead of only reported in status.
func (r *Registry) Validate(p *clusterv1beta1.Placement) []string {
	var problems []string
	if n := p.Spec.NumberOfClusters; n != nil && *n < 0 {
		problems = append(problems, fmt.Sprintf("spec.numberOfClusters must not be negative, got %d", *n))
	}
	for i, pred := range p.Spec.Predicates {
		for _, name := range sortedKeys(r.Selectors) {
			if _, err := r.Selectors[name](pred.RequiredClusterSelector); err != nil {
				problems = append(problems, fmt.Sprintf("spec.predicates[%d].requiredClusterSelector.%v", i, err))
			}
		}
	}
	if _, err := weights(p); err != nil {
		problems = append(problems, err.Error())
	}
	for i, c := range p.Spec.PrioritizerPolicy.Configurations {
		sc := c.ScoreCoordinate
		if sc == nil || (sc.Type != clusterv1beta1.ScoreCoordinateTypeBuiltIn && sc.Type != "") || sc.BuiltIn == "" {
			continue // weights reported it, or it is an AddOn
		}
		if _, ok := r.BuiltIns[sc.BuiltIn]; !ok {
			problems = append(problems, fmt.Sprintf("spec.prioritizerPolicy.configurations[%d].scoreCoordinate.builtIn: unknown prioritizer %q (known: %s)",
				i, sc.BuiltIn, strings.Join(sortedKeys(r.BuiltIns), ", ")))
		}
	}
	gs := p.Spec.DecisionStrategy.GroupStrategy
	seen := map[string]int{}
	for i, g := range gs.DecisionGroups {
		field := fmt.Sprintf("spec.decisionStrategy.groupStrategy.decisionGroups[%d]", i)
		if g.GroupName == "" {
			problems = append(problems, field+".groupName is required")
		} else if j, dup := seen[g.GroupName]; dup {
			problems = append(problems, fmt.Sprintf("%s.groupName %q is already the name of decisionGroups[%d]", field, g.GroupName, j))
		} else {
			seen[g.GroupName] = i
		}
		if _, err := metav1.LabelSelectorAsSelector(&g.ClusterSelector.LabelSelector); err != nil {
			problems = append(problems, fmt.Sprintf("%s.groupClusterSelector.labelSelector: %v", field, err))
		}
		if _, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: g.ClusterSelector.ClaimSelector.MatchExpressions}); err != nil {
			problems = append(problems, fmt.Sprintf("%s.groupClusterSelector.claimSelector: %v", field, err))
		}
	}
	if _, err := perGroup(gs.ClustersPerDecisionGroup.String()); err != nil {
		problems = append(problems, err.Error())
	}
	return problems
}
