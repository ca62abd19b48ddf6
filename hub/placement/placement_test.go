package placement_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub/placement/admission"
	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

func condition(conds []metav1.Condition, t string) metav1.Condition {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func TestDecisionsFollowLabelsTaintsAndClaims(t *testing.T) {
	s := newScope(t, "follow")
	s.cluster("follow-a", map[string]string{"env": "prod"})
	s.cluster("follow-b", map[string]string{"env": "dev"})
	s.placement(st.Placement("prod", "").Labels(map[string]string{"env": "prod"}).Obj())
	s.placement(st.Placement("eu", "").Claim("region", "eu").Obj())

	s.eventuallyDecided("prod", "follow-a")
	s.eventuallyDecided("eu")

	// Label change: b becomes prod.
	s.patchCluster("follow-b", func(c *clusterv1.ManagedCluster) { c.Labels["env"] = "prod" }, false)
	s.eventuallyDecided("prod", "follow-a", "follow-b")

	// Taint: a becomes unreachable, and the placement does not tolerate it.
	s.patchCluster("follow-a", func(c *clusterv1.ManagedCluster) {
		c.Spec.Taints = []clusterv1.Taint{{Key: clusterv1.ManagedClusterTaintUnreachable, Effect: clusterv1.TaintEffectNoSelect, TimeAdded: metav1.Now()}}
	}, false)
	s.eventuallyDecided("prod", "follow-b")
	// ... and comes back.
	s.patchCluster("follow-a", func(c *clusterv1.ManagedCluster) { c.Spec.Taints = nil }, false)
	s.eventuallyDecided("prod", "follow-a", "follow-b")

	// Claim: a claims region=eu.
	s.patchCluster("follow-a", func(c *clusterv1.ManagedCluster) {
		c.Status.ClusterClaims = []clusterv1.ManagedClusterClaim{{Name: "region", Value: "eu"}}
	}, true)
	s.eventuallyDecided("eu", "follow-a")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		p := s.getPlacement("prod")
		assert.Equal(c, int32(2), p.Status.NumberOfSelectedClusters)
		sat := condition(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)
		assert.Equal(c, metav1.ConditionTrue, sat.Status)
		assert.Equal(c, "AllDecisionsScheduled", sat.Reason)
		assert.Equal(c, metav1.ConditionFalse, condition(p.Status.Conditions, clusterv1beta1.PlacementConditionMisconfigured).Status)
		if assert.Len(c, p.Status.DecisionGroups, 1) {
			assert.Equal(c, []string{"prod-decision-1"}, p.Status.DecisionGroups[0].Decisions)
			assert.Equal(c, int32(2), p.Status.DecisionGroups[0].ClustersCount)
		}
	}, timeout, tick)
}

func TestToleratingPlacementKeepsUnreachableCluster(t *testing.T) {
	s := newScope(t, "tolerate")
	s.cluster("tolerate-a", nil)
	s.placement(st.Placement("strict", "").Obj())
	s.placement(st.Placement("lenient", "").Toleration(clusterv1beta1.Toleration{
		Key: clusterv1.ManagedClusterTaintUnreachable, Operator: clusterv1beta1.TolerationOpExists}).Obj())
	s.eventuallyDecided("strict", "tolerate-a")
	s.eventuallyDecided("lenient", "tolerate-a")

	s.patchCluster("tolerate-a", func(c *clusterv1.ManagedCluster) {
		c.Spec.Taints = []clusterv1.Taint{{Key: clusterv1.ManagedClusterTaintUnreachable, Effect: clusterv1.TaintEffectNoSelect, TimeAdded: metav1.Now()}}
	}, false)
	s.eventuallyDecided("strict")
	s.eventuallyDecided("lenient", "tolerate-a")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		sat := condition(s.getPlacement("strict").Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)
		assert.Equal(c, "NoManagedClusterMatched", sat.Reason)
	}, timeout, tick)
}

func TestTolerationSecondsExpire(t *testing.T) {
	s := newScope(t, "expire")
	s.cluster("expire-a", nil)
	secs := int64(3)
	s.placement(st.Placement("p", "").Toleration(clusterv1beta1.Toleration{
		Key: clusterv1.ManagedClusterTaintUnreachable, Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: &secs}).Obj())
	s.eventuallyDecided("p", "expire-a")
	s.patchCluster("expire-a", func(c *clusterv1.ManagedCluster) {
		c.Spec.Taints = []clusterv1.Taint{{Key: clusterv1.ManagedClusterTaintUnreachable, Effect: clusterv1.TaintEffectNoSelect, TimeAdded: metav1.Now()}}
	}, false)
	// Nothing else changes: the scheduler must come back by itself when the toleration runs out.
	s.eventuallyDecided("p")
}

func TestDecisionsFollowSetMembershipAndBindings(t *testing.T) {
	s := newScope(t, "sets")
	s.cluster("sets-a", nil)
	s.cluster("sets-b", nil)
	s.placement(st.Placement("p", "").Obj())
	s.eventuallyDecided("p", "sets-a", "sets-b")

	// a moves to another set, not bound here.
	s.patchCluster("sets-a", func(c *clusterv1.ManagedCluster) { c.Labels[clusterv1beta2.ClusterSetLabel] = "sets-other" }, false)
	s.eventuallyDecided("p", "sets-b")

	// Bind a label-selector set that spans a.
	other := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "sets-by-label"},
		Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
			SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{clusterv1beta2.ClusterSetLabel: "sets-other"}}}}}
	require.NoError(t, hub.Create(s.ctx, other))
	require.NoError(t, hub.Create(s.ctx, st.Binding("sets-by-label", s.ns)))
	s.eventuallyDecided("p", "sets-a", "sets-b")

	// Remove the original binding: only the label-selector set remains.
	require.NoError(t, hub.Delete(s.ctx, st.Binding(s.set, s.ns)))
	s.eventuallyDecided("p", "sets-a")

	// Restrict to a set that is not bound: no intersection.
	require.Eventually(t, func() bool {
		p := s.getPlacement("p")
		p.Spec.ClusterSets = []string{s.set}
		return hub.Update(s.ctx, p) == nil
	}, timeout, tick)
	s.eventuallyDecided("p")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		sat := condition(s.getPlacement("p").Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)
		assert.Equal(c, "NoIntersection", sat.Reason)
		assert.Contains(c, sat.Message, "sets-by-label")
	}, timeout, tick)
}

func TestNoBindingsAndEmptySets(t *testing.T) {
	s := newScope(t, "nobind")
	require.NoError(t, hub.Delete(s.ctx, st.Binding(s.set, s.ns)))
	s.placement(st.Placement("p", "").Obj())
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		sat := condition(s.getPlacement("p").Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)
		assert.Equal(c, "NoManagedClusterSetBindings", sat.Reason)
		// At least one decision object exists, empty.
		var list clusterv1beta1.PlacementDecisionList
		assert.NoError(c, hub.List(s.ctx, &list, client.InNamespace(s.ns)))
		if assert.Len(c, list.Items, 1) {
			assert.Equal(c, "p-decision-1", list.Items[0].Name)
			assert.Empty(c, list.Items[0].Status.Decisions)
		}
	}, timeout, tick)
	require.NoError(t, hub.Create(s.ctx, st.Binding(s.set, s.ns)))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		sat := condition(s.getPlacement("p").Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)
		assert.Equal(c, "AllManagedClusterSetsEmpty", sat.Reason)
	}, timeout, tick)
}

func TestMisconfiguredCELIsReportedNotFatal(t *testing.T) {
	s := newScope(t, "badcel")
	s.cluster("badcel-a", nil)
	// The webhook refuses such a Placement now; one stored before it (or
	// while no hub ran) is still reported, not fatal.
	plantPastWebhook(t, s, st.Placement("bad", "").CEL(`managedCluster.metadata.labels[`).Obj())
	s.placement(st.Placement("good", "").CEL(`managedCluster.metadata.name == "badcel-a"`).Obj())
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		mis := condition(s.getPlacement("bad").Status.Conditions, clusterv1beta1.PlacementConditionMisconfigured)
		assert.Equal(c, metav1.ConditionTrue, mis.Status)
		assert.Equal(c, "Misconfigured", mis.Reason)
		assert.Contains(c, mis.Message, "does not compile")
	}, timeout, tick)
	s.eventuallyDecided("bad")
	s.eventuallyDecided("good", "badcel-a")
}

func TestPaginationPast100(t *testing.T) {
	s := newScope(t, "many")
	for i := range 130 {
		s.cluster(fmt.Sprintf("many-%03d", i), nil)
	}
	s.placement(st.Placement("all", "").Obj())
	s.placement(st.Placement("some", "").Number(105).Obj())
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var list clusterv1beta1.PlacementDecisionList
		assert.NoError(c, hub.List(s.ctx, &list, client.InNamespace(s.ns), client.MatchingLabels{clusterv1beta1.PlacementLabel: "all"}))
		sizes := map[string]int{}
		for _, d := range list.Items {
			sizes[d.Name] = len(d.Status.Decisions)
			assert.Equal(c, "0", d.Labels[clusterv1beta1.DecisionGroupIndexLabel])
		}
		assert.Equal(c, map[string]int{"all-decision-1": 100, "all-decision-2": 30}, sizes)
		assert.Equal(c, int32(130), s.getPlacement("all").Status.NumberOfSelectedClusters)
		assert.Len(c, s.decided("some"), 105)
	}, timeout, tick)

	// A newcomer that sorts first joins the page with room; the full page is not rewritten.
	var page1 clusterv1beta1.PlacementDecision
	require.NoError(t, hub.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "all-decision-1"}, &page1))
	s.cluster("many-000a", nil)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var page2 clusterv1beta1.PlacementDecision
		assert.NoError(c, hub.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "all-decision-2"}, &page2))
		assert.Len(c, page2.Status.Decisions, 31)
	}, timeout, tick)
	var page1After clusterv1beta1.PlacementDecision
	require.NoError(t, hub.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "all-decision-1"}, &page1After))
	assert.Equal(t, page1.ResourceVersion, page1After.ResourceVersion)

	// Shrinking to clusters that all sit on the first page deletes the second.
	require.NoError(t, hub.Delete(s.ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "many-000a"}}))
	require.Eventually(t, func() bool {
		p := s.getPlacement("all")
		n := int32(7)
		p.Spec.NumberOfClusters = &n
		return hub.Update(s.ctx, p) == nil
	}, timeout, tick)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var list clusterv1beta1.PlacementDecisionList
		assert.NoError(c, hub.List(s.ctx, &list, client.InNamespace(s.ns), client.MatchingLabels{clusterv1beta1.PlacementLabel: "all"}))
		assert.Len(c, list.Items, 1)
		assert.Len(c, s.decided("all"), 7)
	}, timeout, tick)
}

func TestDecisionsAreStable(t *testing.T) {
	s := newScope(t, "stable")
	s.cluster("stable-a", nil)
	s.cluster("stable-b", nil)
	s.placement(st.Placement("p", "").Number(1).Obj())
	s.eventuallyDecided("p", "stable-a")
	var before clusterv1beta1.PlacementDecision
	require.NoError(t, hub.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "p-decision-1"}, &before))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Len(c, s.getPlacement("p").Status.DecisionGroups, 1)
	}, timeout, tick)
	placementBefore := s.getPlacement("p")

	// An irrelevant change (an annotation) and a new cluster that sorts first
	// must not rewrite the decision.
	s.patchCluster("stable-b", func(c *clusterv1.ManagedCluster) { c.Annotations = map[string]string{"note": "x"} }, false)
	s.cluster("stable-0", nil)
	// Another placement in the namespace sees the new cluster: the controller has caught up.
	s.placement(st.Placement("witness", "").Obj())
	s.eventuallyDecided("witness", "stable-0", "stable-a", "stable-b")
	var after clusterv1beta1.PlacementDecision
	require.NoError(t, hub.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "p-decision-1"}, &after))
	assert.Equal(t, before.ResourceVersion, after.ResourceVersion)
	assert.Equal(t, placementBefore.ResourceVersion, s.getPlacement("p").ResourceVersion, "placement status must not be rewritten")
}

func TestDecisionGroups(t *testing.T) {
	s := newScope(t, "groups")
	s.cluster("groups-a", map[string]string{"canary": "true"})
	s.cluster("groups-b", nil)
	s.cluster("groups-c", nil)
	s.placement(st.Placement("p", "").Group("canary", map[string]string{"canary": "true"}).PerGroup("1").Obj())
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		p := s.getPlacement("p")
		var got []string
		for _, g := range p.Status.DecisionGroups {
			got = append(got, fmt.Sprintf("%d/%s/%v/%d", g.DecisionGroupIndex, g.DecisionGroupName, g.Decisions, g.ClustersCount))
		}
		assert.Equal(c, []string{"0/canary/[p-decision-1]/1", "1//[p-decision-2]/1", "2//[p-decision-3]/1"}, got)
		var d clusterv1beta1.PlacementDecision
		if assert.NoError(c, hub.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "p-decision-1"}, &d)) {
			assert.Equal(c, "canary", d.Labels[clusterv1beta1.DecisionGroupNameLabel])
		}
	}, timeout, tick)
}

func TestClusterSetsAndBindingsStatus(t *testing.T) {
	s := newScope(t, "setstatus")
	// Built-ins exist; a cluster without a set joins default.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var d, g clusterv1beta2.ManagedClusterSet
		assert.NoError(c, hub.Get(s.ctx, client.ObjectKey{Name: "default"}, &d))
		assert.NoError(c, hub.Get(s.ctx, client.ObjectKey{Name: "global"}, &g))
		assert.Equal(c, clusterv1beta2.LabelSelector, g.Spec.ClusterSelector.SelectorType)
	}, timeout, tick)
	require.NoError(t, hub.Create(s.ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "setstatus-loose"}}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var mc clusterv1.ManagedCluster
		assert.NoError(c, hub.Get(s.ctx, client.ObjectKey{Name: "setstatus-loose"}, &mc))
		assert.Equal(c, "default", mc.Labels[clusterv1beta2.ClusterSetLabel])
	}, timeout, tick)

	// The test's own set is empty, then has one member.
	setCond := func(c *assert.CollectT) metav1.Condition {
		var set clusterv1beta2.ManagedClusterSet
		assert.NoError(c, hub.Get(s.ctx, client.ObjectKey{Name: s.set}, &set))
		return condition(set.Status.Conditions, clusterv1beta2.ManagedClusterSetConditionEmpty)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cond := setCond(c)
		assert.Equal(c, metav1.ConditionTrue, cond.Status)
		assert.Equal(c, "NoClusterMatched", cond.Reason)
	}, timeout, tick)
	s.cluster("setstatus-a", nil)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cond := setCond(c)
		assert.Equal(c, metav1.ConditionFalse, cond.Status)
		assert.Equal(c, "1 ManagedCluster selected", cond.Message)
	}, timeout, tick)

	// A binding to a set that does not exist is not Bound until the set appears.
	ghost := st.Binding("setstatus-ghost", s.ns)
	require.NoError(t, hub.Create(s.ctx, ghost))
	bound := func(c *assert.CollectT) metav1.Condition {
		var b clusterv1beta2.ManagedClusterSetBinding
		assert.NoError(c, hub.Get(s.ctx, client.ObjectKeyFromObject(ghost), &b))
		return condition(b.Status.Conditions, clusterv1beta2.ClusterSetBindingBoundType)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, "ClusterSetNotFound", bound(c).Reason)
	}, timeout, tick)
	require.NoError(t, hub.Create(s.ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "setstatus-ghost"}}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, metav1.ConditionTrue, bound(c).Status)
	}, timeout, tick)
}

// plantPastWebhook stores p although the Placement webhook would refuse it:
// it takes the webhook out of the registration, creates p as soon as the
// apiserver admits it, and puts the webhook back (waiting until it refuses
// again).
func plantPastWebhook(t *testing.T, s *scope, p *clusterv1beta1.Placement) {
	t.Helper()
	p.Namespace = s.ns
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, hub.Get(s.ctx, client.ObjectKey{Name: "placement-test"}, &vwc))
	all := vwc.Webhooks
	var kept []admissionregistrationv1.ValidatingWebhook
	for _, h := range all {
		if !strings.HasSuffix(*h.ClientConfig.URL, admission.WebhookPath) {
			kept = append(kept, h)
		}
	}
	vwc.Webhooks = kept
	require.NoError(t, hub.Update(s.ctx, &vwc))
	require.Eventually(t, func() bool { return hub.Create(s.ctx, p.DeepCopy()) == nil }, timeout, tick, "planted")
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := hub.Get(s.ctx, client.ObjectKey{Name: "placement-test"}, &vwc); err != nil {
			return err
		}
		vwc.Webhooks = all
		return hub.Update(s.ctx, &vwc)
	}))
	probe := p.DeepCopy()
	probe.Name, probe.GenerateName = "", p.Name+"-probe-"
	require.Eventually(t, func() bool { return apierrors.IsInvalid(hub.Create(s.ctx, probe.DeepCopy())) }, timeout, tick, "webhook back")
}
