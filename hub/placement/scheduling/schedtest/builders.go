// Package schedtest has fluent builders for scheduling fixtures:
//
//	schedtest.Cluster("c1").Label("env", "prod").Claim("region", "eu").Obj()
//	schedtest.Placement("p", "ns").Number(2).Tolerate("k", "v").Obj()
//
// It is shared by unit, integration and benchmark code.
package schedtest

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

// ClusterBuilder builds a ManagedCluster.
type ClusterBuilder struct{ c clusterv1.ManagedCluster }

// Cluster starts a ManagedCluster in the default set, accepted by the hub
// (spec.hubAcceptsClient and HubAcceptedManagedCluster=True): the scheduler
// decides accepted clusters only. Status does not survive a Create: on an
// apiserver, write it with the status subresource.
func Cluster(name string) *ClusterBuilder {
	return &ClusterBuilder{c: clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "default"}},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
		Status: clusterv1.ManagedClusterStatus{Conditions: []metav1.Condition{{Type: clusterv1.ManagedClusterConditionHubAccepted,
			Status: metav1.ConditionTrue, Reason: "HubClusterAdminAccepted"}}}}}
}

// Pending makes the cluster one nobody accepted yet: its agent created it with
// the bootstrap identity (spec.hubAcceptsClient=false, no HubAccepted condition).
func (b *ClusterBuilder) Pending() *ClusterBuilder {
	b.c.Spec.HubAcceptsClient = false
	b.c.Status.Conditions = nil
	return b
}

func (b *ClusterBuilder) Label(k, v string) *ClusterBuilder { b.c.Labels[k] = v; return b }

// Set moves the cluster to the exclusive set name ("" removes the label).
func (b *ClusterBuilder) Set(name string) *ClusterBuilder {
	if name == "" {
		delete(b.c.Labels, clusterv1beta2.ClusterSetLabel)
	} else {
		b.c.Labels[clusterv1beta2.ClusterSetLabel] = name
	}
	return b
}

func (b *ClusterBuilder) Claim(k, v string) *ClusterBuilder {
	b.c.Status.ClusterClaims = append(b.c.Status.ClusterClaims, clusterv1.ManagedClusterClaim{Name: k, Value: v})
	return b
}

func (b *ClusterBuilder) Taint(key, value string, effect clusterv1.TaintEffect, added time.Time) *ClusterBuilder {
	b.c.Spec.Taints = append(b.c.Spec.Taints, clusterv1.Taint{Key: key, Value: value, Effect: effect, TimeAdded: metav1.NewTime(added)})
	return b
}

// Allocatable sets allocatable cpu and memory ("4", "16Gi").
func (b *ClusterBuilder) Allocatable(cpu, memory string) *ClusterBuilder {
	b.c.Status.Allocatable = clusterv1.ResourceList{
		clusterv1.ResourceCPU:    resource.MustParse(cpu),
		clusterv1.ResourceMemory: resource.MustParse(memory),
	}
	return b
}

func (b *ClusterBuilder) Obj() *clusterv1.ManagedCluster { c := b.c.DeepCopy(); return c }

// PlacementBuilder builds a Placement.
type PlacementBuilder struct{ p clusterv1beta1.Placement }

func Placement(name, namespace string) *PlacementBuilder {
	return &PlacementBuilder{p: clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}}
}

func (b *PlacementBuilder) Number(n int32) *PlacementBuilder {
	b.p.Spec.NumberOfClusters = &n
	return b
}

func (b *PlacementBuilder) Sets(names ...string) *PlacementBuilder {
	b.p.Spec.ClusterSets = names
	return b
}

// Predicate adds an ORed predicate.
func (b *PlacementBuilder) Predicate(sel clusterv1beta1.ClusterSelector) *PlacementBuilder {
	b.p.Spec.Predicates = append(b.p.Spec.Predicates, clusterv1beta1.ClusterPredicate{RequiredClusterSelector: sel})
	return b
}

// Labels adds a predicate matching all the given labels.
func (b *PlacementBuilder) Labels(kv map[string]string) *PlacementBuilder {
	return b.Predicate(clusterv1beta1.ClusterSelector{LabelSelector: metav1.LabelSelector{MatchLabels: kv}})
}

// Claim adds a predicate requiring claim k to be one of values.
func (b *PlacementBuilder) Claim(k string, values ...string) *PlacementBuilder {
	return b.Predicate(clusterv1beta1.ClusterSelector{ClaimSelector: clusterv1beta1.ClusterClaimSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: k, Operator: metav1.LabelSelectorOpIn, Values: values}}}})
}

// CEL adds a predicate of ANDed CEL expressions.
func (b *PlacementBuilder) CEL(exprs ...string) *PlacementBuilder {
	return b.Predicate(clusterv1beta1.ClusterSelector{CelSelector: clusterv1beta1.ClusterCelSelector{CelExpressions: exprs}})
}

func (b *PlacementBuilder) Toleration(t clusterv1beta1.Toleration) *PlacementBuilder {
	b.p.Spec.Tolerations = append(b.p.Spec.Tolerations, t)
	return b
}

// Prioritizer adds a built-in prioritizer with weight.
func (b *PlacementBuilder) Prioritizer(builtIn string, weight int32) *PlacementBuilder {
	b.p.Spec.PrioritizerPolicy.Configurations = append(b.p.Spec.PrioritizerPolicy.Configurations, clusterv1beta1.PrioritizerConfig{
		ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeBuiltIn, BuiltIn: builtIn}, Weight: weight})
	return b
}

// AddOnScore adds an addon prioritizer with weight.
func (b *PlacementBuilder) AddOnScore(resource, score string, weight int32) *PlacementBuilder {
	b.p.Spec.PrioritizerPolicy.Configurations = append(b.p.Spec.PrioritizerPolicy.Configurations, clusterv1beta1.PrioritizerConfig{
		ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeAddOn,
			AddOn: &clusterv1beta1.AddOnScore{ResourceName: resource, ScoreName: score}}, Weight: weight})
	return b
}

func (b *PlacementBuilder) Exact() *PlacementBuilder {
	b.p.Spec.PrioritizerPolicy.Mode = clusterv1beta1.PrioritizerPolicyModeExact
	return b
}

func (b *PlacementBuilder) SortByScore() *PlacementBuilder {
	b.p.Spec.SortBy = clusterv1beta1.PlacementSortByScore
	return b
}

// Spread adds a spread constraint on a label (claim=false) or claim.
func (b *PlacementBuilder) Spread(key string, claim bool, maxSkew int32, action clusterv1beta1.UnsatisfiableMaxSkewAction) *PlacementBuilder {
	t := clusterv1beta1.SpreadConstraintsTerm{TopologyKey: key, TopologyKeyType: clusterv1beta1.TopologyKeyTypeLabel, MaxSkew: maxSkew, WhenUnsatisfiable: action}
	if claim {
		t.TopologyKeyType = clusterv1beta1.TopologyKeyTypeClaim
	}
	b.p.Spec.SpreadPolicy.SpreadConstraints = append(b.p.Spec.SpreadPolicy.SpreadConstraints, t)
	return b
}

// Group adds a predefined decision group selecting clusters by labels.
func (b *PlacementBuilder) Group(name string, kv map[string]string) *PlacementBuilder {
	gs := &b.p.Spec.DecisionStrategy.GroupStrategy
	gs.DecisionGroups = append(gs.DecisionGroups, clusterv1beta1.DecisionGroup{GroupName: name,
		ClusterSelector: clusterv1beta1.GroupClusterSelector{LabelSelector: metav1.LabelSelector{MatchLabels: kv}}})
	return b
}

// PerGroup sets clustersPerDecisionGroup ("3" or "25%").
func (b *PlacementBuilder) PerGroup(v string) *PlacementBuilder {
	b.p.Spec.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup = intstr.Parse(v)
	return b
}

func (b *PlacementBuilder) Obj() *clusterv1beta1.Placement { return b.p.DeepCopy() }

// Set builds a ManagedClusterSet; selector nil means ExclusiveClusterSetLabel.
func Set(name string, selector *metav1.LabelSelector) *clusterv1beta2.ManagedClusterSet {
	s := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	s.Spec.ClusterSelector.SelectorType = clusterv1beta2.ExclusiveClusterSetLabel
	if selector != nil {
		s.Spec.ClusterSelector = clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector, LabelSelector: selector}
	}
	return s
}

// Binding builds a ManagedClusterSetBinding of set in namespace.
func Binding(set, namespace string) *clusterv1beta2.ManagedClusterSetBinding {
	return &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: set, Namespace: namespace},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}}
}
