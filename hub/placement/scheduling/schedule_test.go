package scheduling

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const ns = "apps"

// world is a snapshot fixture: clusters and sets; the default set is bound in ns
// unless bindings are given.
type world struct {
	clusters []*clusterv1.ManagedCluster
	sets     []*clusterv1beta2.ManagedClusterSet
	bindings []*clusterv1beta2.ManagedClusterSetBinding
	scores   []*clusterv1alpha1.AddOnPlacementScore
	decided  []string
	counts   map[string]int
}

func (w world) snapshot() *Snapshot {
	sets := w.sets
	if sets == nil {
		sets = []*clusterv1beta2.ManagedClusterSet{st.Set("default", nil), st.Set("global", &metav1.LabelSelector{})}
	}
	bindings := w.bindings
	if bindings == nil {
		bindings = []*clusterv1beta2.ManagedClusterSetBinding{st.Binding("default", ns)}
	}
	return &Snapshot{Clusters: NewClusterInfos(w.clusters, w.scores), ClusterSets: sets, Bindings: bindings,
		Decided: w.decided, DecisionCounts: w.counts, Now: now}
}

func names(ds []Decision) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.ClusterName)
	}
	return out
}

func clusters(names ...string) []*clusterv1.ManagedCluster {
	var out []*clusterv1.ManagedCluster
	for _, n := range names {
		out = append(out, st.Cluster(n).Obj())
	}
	return out
}

func TestSchedule(t *testing.T) {
	secs := func(s int64) *int64 { return &s }
	tests := []struct {
		name      string
		world     world
		placement *clusterv1beta1.Placement
		want      []string
		reason    string
		requeue   time.Duration
	}{
		{
			name:      "empty placement selects every cluster of the bound sets",
			world:     world{clusters: clusters("c2", "c1", "c3")},
			placement: st.Placement("p", ns).Obj(),
			want:      []string{"c1", "c2", "c3"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name:      "no bindings",
			world:     world{clusters: clusters("c1"), bindings: []*clusterv1beta2.ManagedClusterSetBinding{}},
			placement: st.Placement("p", ns).Obj(),
			want:      []string{},
			reason:    ReasonNoManagedClusterSetBindings,
		},
		{
			name:      "binding in another namespace does not count",
			world:     world{clusters: clusters("c1"), bindings: []*clusterv1beta2.ManagedClusterSetBinding{st.Binding("global", "other")}},
			placement: st.Placement("p", ns).Obj(),
			want:      []string{},
			reason:    ReasonNoManagedClusterSetBindings,
		},
		{
			name:      "binding to a set that does not exist is not bound",
			world:     world{clusters: clusters("c1"), bindings: []*clusterv1beta2.ManagedClusterSetBinding{st.Binding("ghost", ns)}},
			placement: st.Placement("p", ns).Obj(),
			want:      []string{},
			reason:    ReasonNoManagedClusterSetBindings,
		},
		{
			name:      "clusterSets not bound: no intersection",
			world:     world{clusters: clusters("c1")},
			placement: st.Placement("p", ns).Sets("prod").Obj(),
			want:      []string{},
			reason:    ReasonNoIntersection,
		},
		{
			name: "bound sets are empty",
			world: world{clusters: []*clusterv1.ManagedCluster{st.Cluster("c1").Set("prod").Obj()},
				sets: []*clusterv1beta2.ManagedClusterSet{st.Set("default", nil), st.Set("prod", nil)}},
			placement: st.Placement("p", ns).Obj(),
			want:      []string{},
			reason:    ReasonAllManagedClusterSetsEmpty,
		},
		{
			name: "clusterSets narrows to the named bound sets",
			world: world{
				clusters: []*clusterv1.ManagedCluster{st.Cluster("c1").Set("prod").Obj(), st.Cluster("c2").Obj()},
				sets:     []*clusterv1beta2.ManagedClusterSet{st.Set("default", nil), st.Set("prod", nil)},
				bindings: []*clusterv1beta2.ManagedClusterSetBinding{st.Binding("default", ns), st.Binding("prod", ns)},
			},
			placement: st.Placement("p", ns).Sets("prod").Obj(),
			want:      []string{"c1"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name: "label-selector set (global) spans every cluster",
			world: world{
				clusters: []*clusterv1.ManagedCluster{st.Cluster("c1").Set("prod").Obj(), st.Cluster("c2").Set("").Obj()},
				bindings: []*clusterv1beta2.ManagedClusterSetBinding{st.Binding("global", ns)},
			},
			placement: st.Placement("p", ns).Obj(),
			want:      []string{"c1", "c2"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name: "label predicate",
			world: world{clusters: []*clusterv1.ManagedCluster{
				st.Cluster("c1").Label("env", "prod").Obj(), st.Cluster("c2").Label("env", "dev").Obj()}},
			placement: st.Placement("p", ns).Labels(map[string]string{"env": "prod"}).Obj(),
			want:      []string{"c1"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name: "predicates are ORed",
			world: world{clusters: []*clusterv1.ManagedCluster{
				st.Cluster("c1").Label("env", "prod").Obj(), st.Cluster("c2").Claim("region", "eu").Obj(), st.Cluster("c3").Obj()}},
			placement: st.Placement("p", ns).Labels(map[string]string{"env": "prod"}).Claim("region", "eu").Obj(),
			want:      []string{"c1", "c2"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name: "label, claim and CEL in one predicate are ANDed",
			world: world{clusters: []*clusterv1.ManagedCluster{
				st.Cluster("c1").Label("env", "prod").Claim("region", "eu").Obj(),
				st.Cluster("c2").Label("env", "prod").Claim("region", "us").Obj(),
				st.Cluster("c3").Label("env", "prod").Label("tier", "gold").Claim("region", "eu").Obj()}},
			placement: st.Placement("p", ns).Predicate(clusterv1beta1.ClusterSelector{
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
				ClaimSelector: clusterv1beta1.ClusterClaimSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu"}}}},
				CelSelector:   clusterv1beta1.ClusterCelSelector{CelExpressions: []string{`!("tier" in managedCluster.metadata.labels)`}},
			}).Obj(),
			want:   []string{"c1"},
			reason: ReasonAllDecisionsScheduled,
		},
		{
			name:      "nothing matches",
			world:     world{clusters: clusters("c1")},
			placement: st.Placement("p", ns).Labels(map[string]string{"env": "prod"}).Obj(),
			want:      []string{},
			reason:    ReasonNoManagedClusterMatched,
		},
		{
			name: "untolerated NoSelect taint removes even a decided cluster",
			world: world{clusters: []*clusterv1.ManagedCluster{
				st.Cluster("c1").Taint(clusterv1.ManagedClusterTaintUnreachable, "", clusterv1.TaintEffectNoSelect, now).Obj(),
				st.Cluster("c2").Obj()}, decided: []string{"c1"}},
			placement: st.Placement("p", ns).Obj(),
			want:      []string{"c2"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name: "tolerationSeconds tolerates until timeAdded+seconds and asks to requeue then",
			world: world{clusters: []*clusterv1.ManagedCluster{
				st.Cluster("c1").Taint(clusterv1.ManagedClusterTaintUnreachable, "", clusterv1.TaintEffectNoSelect, now.Add(-time.Minute)).Obj()}},
			placement: st.Placement("p", ns).Toleration(clusterv1beta1.Toleration{Key: clusterv1.ManagedClusterTaintUnreachable,
				Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: secs(300)}).Obj(),
			want:    []string{"c1"},
			reason:  ReasonAllDecisionsScheduled,
			requeue: 4 * time.Minute,
		},
		{
			name: "expired toleration no longer tolerates",
			world: world{clusters: []*clusterv1.ManagedCluster{
				st.Cluster("c1").Taint(clusterv1.ManagedClusterTaintUnreachable, "", clusterv1.TaintEffectNoSelect, now.Add(-time.Hour)).Obj()}},
			placement: st.Placement("p", ns).Toleration(clusterv1beta1.Toleration{Key: clusterv1.ManagedClusterTaintUnreachable,
				Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: secs(300)}).Obj(),
			want:   []string{},
			reason: ReasonNoManagedClusterMatched,
		},
		{
			name: "NoSelectIfNew keeps a decided cluster and refuses a new one",
			world: world{clusters: []*clusterv1.ManagedCluster{
				st.Cluster("c1").Taint("gpu", "", clusterv1.TaintEffectNoSelectIfNew, now).Obj(),
				st.Cluster("c2").Taint("gpu", "", clusterv1.TaintEffectNoSelectIfNew, now).Obj()}, decided: []string{"c1"}},
			placement: st.Placement("p", ns).Obj(),
			want:      []string{"c1"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name: "PreferNoSelect clusters are chosen last",
			world: world{clusters: []*clusterv1.ManagedCluster{
				st.Cluster("a").Taint("maint", "", clusterv1.TaintEffectPreferNoSelect, now).Obj(), st.Cluster("b").Obj()}},
			placement: st.Placement("p", ns).Number(1).Obj(),
			want:      []string{"b"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name:      "PreferNoSelect clusters are still selected when needed",
			world:     world{clusters: []*clusterv1.ManagedCluster{st.Cluster("a").Taint("maint", "", clusterv1.TaintEffectPreferNoSelect, now).Obj()}},
			placement: st.Placement("p", ns).Number(1).Obj(),
			want:      []string{"a"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name:      "a pending cluster (nobody accepted it) is never decided, whatever the tolerations",
			world:     world{clusters: []*clusterv1.ManagedCluster{st.Cluster("c1").Obj(), st.Cluster("joining").Pending().Obj()}},
			placement: st.Placement("p", ns).Toleration(clusterv1beta1.Toleration{Operator: clusterv1beta1.TolerationOpExists}).Obj(),
			want:      []string{"c1"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name: "a denied cluster leaves, even a decided one (Steady)",
			world: world{clusters: []*clusterv1.ManagedCluster{func() *clusterv1.ManagedCluster {
				c := st.Cluster("denied").Obj()
				c.Spec.HubAcceptsClient = false // the hub has not revoked yet: HubAccepted is still True
				return c
			}(), st.Cluster("c1").Obj()}, decided: []string{"denied"}},
			placement: st.Placement("p", ns).Number(1).Obj(),
			want:      []string{"c1"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name: "an accepted cluster waits for the hub to grant its rights",
			world: world{clusters: []*clusterv1.ManagedCluster{func() *clusterv1.ManagedCluster {
				c := st.Cluster("granting").Pending().Obj()
				c.Spec.HubAcceptsClient = true
				return c
			}()}},
			placement: st.Placement("p", ns).Obj(),
			want:      []string{},
			reason:    ReasonNoManagedClusterMatched,
		},
		{
			name:      "only pending clusters in the bound sets: nothing matches",
			world:     world{clusters: []*clusterv1.ManagedCluster{st.Cluster("a").Pending().Obj(), st.Cluster("b").Pending().Obj()}},
			placement: st.Placement("p", ns).Obj(),
			want:      []string{},
			reason:    ReasonNoManagedClusterMatched,
		},
		{
			name:      "numberOfClusters ties break by name",
			world:     world{clusters: clusters("c3", "c1", "c2")},
			placement: st.Placement("p", ns).Number(2).Obj(),
			want:      []string{"c1", "c2"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name:      "numberOfClusters larger than the fleet",
			world:     world{clusters: clusters("c1")},
			placement: st.Placement("p", ns).Number(3).Obj(),
			want:      []string{"c1"},
			reason:    ReasonNotAllDecisionsScheduled,
		},
		{
			name:      "Steady keeps current decisions",
			world:     world{clusters: clusters("c1", "c2", "c3"), decided: []string{"c3"}},
			placement: st.Placement("p", ns).Number(1).Obj(),
			want:      []string{"c3"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name:      "Balance prefers clusters fewer placements use",
			world:     world{clusters: clusters("c1", "c2", "c3"), counts: map[string]int{"c1": 4, "c2": 1}},
			placement: st.Placement("p", ns).Number(2).Obj(),
			want:      []string{"c2", "c3"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name: "ResourceAllocatableMemory in Exact mode",
			world: world{clusters: []*clusterv1.ManagedCluster{
				st.Cluster("c1").Allocatable("8", "8Gi").Obj(), st.Cluster("c2").Allocatable("2", "64Gi").Obj(), st.Cluster("c3").Allocatable("4", "16Gi").Obj()},
				decided: []string{"c1"}},
			placement: st.Placement("p", ns).Exact().Prioritizer("ResourceAllocatableMemory", 1).Number(2).Obj(),
			want:      []string{"c2", "c3"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name: "ResourceAllocatableCPU outweighs Steady in Additive mode",
			world: world{clusters: []*clusterv1.ManagedCluster{
				st.Cluster("c1").Allocatable("8", "8Gi").Obj(), st.Cluster("c2").Allocatable("2", "64Gi").Obj()},
				decided: []string{"c2"}},
			placement: st.Placement("p", ns).Prioritizer("ResourceAllocatableCPU", 3).Number(1).Obj(),
			want:      []string{"c1"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name: "negative weight picks the smallest",
			world: world{clusters: []*clusterv1.ManagedCluster{
				st.Cluster("c1").Allocatable("8", "8Gi").Obj(), st.Cluster("c2").Allocatable("2", "64Gi").Obj()}},
			placement: st.Placement("p", ns).Exact().Prioritizer("ResourceAllocatableCPU", -1).Number(1).Obj(),
			want:      []string{"c2"},
			reason:    ReasonAllDecisionsScheduled,
		},
		{
			name: "AddOn score, expired scores count as 0",
			world: world{clusters: clusters("c1", "c2", "c3"), scores: []*clusterv1alpha1.AddOnPlacementScore{
				addonScore("c1", "lat", "p99", 10, nil),
				addonScore("c2", "lat", "p99", 90, &metav1.Time{Time: now.Add(-time.Second)}),
				addonScore("c3", "lat", "p99", 50, &metav1.Time{Time: now.Add(time.Hour)}),
			}},
			placement: st.Placement("p", ns).Exact().AddOnScore("lat", "p99", 1).Number(2).Obj(),
			want:      []string{"c1", "c3"},
			reason:    ReasonAllDecisionsScheduled,
			requeue:   time.Hour,
		},
		{
			name: "sortBy Score orders decisions by score",
			world: world{clusters: clusters("a", "b", "c"), scores: []*clusterv1alpha1.AddOnPlacementScore{
				addonScore("a", "s", "v", 10, nil), addonScore("b", "s", "v", 30, nil), addonScore("c", "s", "v", 20, nil)}},
			placement: st.Placement("p", ns).Exact().AddOnScore("s", "v", 1).SortByScore().Obj(),
			want:      []string{"b", "c", "a"},
			reason:    ReasonAllDecisionsScheduled,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := Schedule(tc.world.snapshot(), tc.placement)
			require.NoError(t, res.Misconfigured)
			assert.Equal(t, tc.want, names(res.Decisions))
			assert.Equal(t, tc.reason, res.Reason)
			assert.Equal(t, tc.reason == ReasonAllDecisionsScheduled, res.Satisfied)
			assert.NotEmpty(t, res.Message)
			assert.Equal(t, tc.requeue, res.RequeueAfter)
			assert.NotEmpty(t, res.Groups, "there is always a decision group")
		})
	}
}

func addonScore(cluster, name, score string, v int32, until *metav1.Time) *clusterv1alpha1.AddOnPlacementScore {
	s := &clusterv1alpha1.AddOnPlacementScore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cluster}}
	s.Status.Scores = []clusterv1alpha1.AddOnPlacementScoreItem{{Name: score, Value: v}}
	s.Status.ValidUntil = until
	return s
}

func TestScheduleMisconfigured(t *testing.T) {
	w := world{clusters: clusters("c1")}
	tests := []struct {
		name      string
		placement *clusterv1beta1.Placement
		wantErr   string
	}{
		{"CEL does not compile", st.Placement("p", ns).CEL("managedCluster.metadata.labels[").Obj(), "celExpressions[0]"},
		{"CEL is not boolean", st.Placement("p", ns).CEL(`"text"`).Obj(), "must evaluate to a bool"},
		{"bad label selector", st.Placement("p", ns).Predicate(clusterv1beta1.ClusterSelector{LabelSelector: metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}}).Obj(), "spec.predicates[0].requiredClusterSelector.labelSelector"},
		{"unknown built-in", st.Placement("p", ns).Prioritizer("Nope", 1).Number(1).Obj(), `unknown built-in prioritizer "Nope"`},
		{"weight out of range", st.Placement("p", ns).Prioritizer("Steady", 11).Obj(), "outside -10..10"},
		{"bad clustersPerDecisionGroup", st.Placement("p", ns).PerGroup("0%").Obj(), "clustersPerDecisionGroup"},
		{"bad spread key type", func() *clusterv1beta1.Placement {
			p := st.Placement("p", ns).Spread("zone", false, 1, clusterv1beta1.DoNotSchedule).Obj()
			p.Spec.SpreadPolicy.SpreadConstraints[0].TopologyKeyType = "Annotation"
			return p
		}(), "topologyKeyType"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := Schedule(w.snapshot(), tc.placement)
			require.Error(t, res.Misconfigured)
			assert.Contains(t, res.Misconfigured.Error(), tc.wantErr)
		})
	}
}

func TestNoMatchSaysWhy(t *testing.T) {
	w := world{clusters: []*clusterv1.ManagedCluster{
		st.Cluster("c1").Taint(clusterv1.ManagedClusterTaintUnreachable, "", clusterv1.TaintEffectNoSelect, now).Obj(),
		st.Cluster("c2").Taint(clusterv1.ManagedClusterTaintUnreachable, "", clusterv1.TaintEffectNoSelect, now).Obj(),
		st.Cluster("c3").Label("env", "dev").Taint(clusterv1.ManagedClusterTaintUnreachable, "", clusterv1.TaintEffectNoSelect, now).Obj(),
	}}
	res := Schedule(w.snapshot(), st.Placement("p", ns).Obj())
	assert.Equal(t, ReasonNoManagedClusterMatched, res.Reason)
	assert.Contains(t, res.Message, "3: taint cluster.open-cluster-management.io/unreachable=:NoSelect is not tolerated")
}

func TestScheduleIsStable(t *testing.T) {
	// Same inputs, same outputs, whatever the cluster order.
	w := world{clusters: clusters("c5", "c3", "c1", "c4", "c2")}
	p := st.Placement("p", ns).Number(3).Obj()
	first := Schedule(w.snapshot(), p)
	w.clusters = clusters("c1", "c2", "c3", "c4", "c5")
	w.decided = names(first.Decisions)
	second := Schedule(w.snapshot(), p)
	assert.Equal(t, names(first.Decisions), names(second.Decisions))
	// A new cluster that sorts first does not displace the current decisions.
	w.clusters = append(w.clusters, st.Cluster("c0").Obj())
	third := Schedule(w.snapshot(), p)
	assert.Equal(t, names(first.Decisions), names(third.Decisions))
}
