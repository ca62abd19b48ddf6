package propagator_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
	"flotilla.dev/flotilla/policy/propagator"
	"flotilla.dev/flotilla/test/testenv"
)

func TestPropagationFollowsDecisionsAndCleansUp(t *testing.T) {
	s := newScope(t, "follow")
	s.clusters("prod", "follow-1", "follow-2")
	s.clusters("dev", "follow-3")
	s.placement("prod", "prod")
	s.policy("nist", func(p *policyv1.Policy) { p.Labels = map[string]string{"team": "sec"} })
	s.binding("nist", "prod", policies("nist"))

	s.eventuallyReplicas("nist", "follow-1", "follow-2")
	r := s.replica("nist", "follow-1")
	require.NotNil(t, r)
	assert.Equal(t, map[string]string{"team": "sec", policyv1.RootPolicyLabel: "follow.nist",
		policyv1.ClusterNameLabel: "follow-1", policyv1.ClusterNamespaceLabel: "follow-1"}, r.Labels)
	assert.Equal(t, "NIST SP 800-53", r.Annotations[policyv1.StandardsAnnotation])
	assert.Equal(t, s.root("nist").Spec, r.Spec)

	// A cluster joins the decision, another leaves it.
	s.relabel("follow-3", "prod")
	s.relabel("follow-1", "dev")
	s.eventuallyReplicas("nist", "follow-2", "follow-3")

	// A spec change reaches every replica.
	update(s, client.ObjectKey{Namespace: s.ns, Name: "nist"}, &policyv1.Policy{}, func(p *policyv1.Policy) { p.Spec.RemediationAction = "enforce" }, false)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, cl := range []string{"follow-2", "follow-3"} {
			if r := s.replica("nist", cl); assert.NotNil(c, r) {
				assert.Equal(c, policyv1.RemediationAction("enforce"), r.Spec.RemediationAction)
			}
		}
	}, timeout, tick)

	// The binding goes: so do the replicas.
	require.NoError(t, hub.Delete(s.ctx, &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: "nist", Namespace: s.ns}}))
	s.eventuallyReplicas("nist")

	// Bound again, then the root is deleted: replicas go with it.
	s.binding("nist2", "prod", policies("nist"))
	s.eventuallyReplicas("nist", "follow-2", "follow-3")
	require.NoError(t, hub.Delete(s.ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "nist", Namespace: s.ns}}))
	s.eventuallyReplicas("nist")
}

func TestDisabledPolicyLeavesEveryCluster(t *testing.T) {
	s := newScope(t, "disabled")
	s.clusters("prod", "disabled-1", "disabled-2")
	s.placement("prod", "prod")
	s.policy("p")
	s.binding("p", "prod", policies("p"))
	s.eventuallyReplicas("p", "disabled-1", "disabled-2")

	update(s, client.ObjectKey{Namespace: s.ns, Name: "p"}, &policyv1.Policy{}, func(p *policyv1.Policy) { p.Spec.Disabled = true }, false)
	s.eventuallyReplicas("p")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := s.root("p").Status
		assert.Len(c, st.Placement, 1, "a disabled policy still reports its bindings")
		assert.Empty(c, st.Status)
	}, timeout, tick)

	update(s, client.ObjectKey{Namespace: s.ns, Name: "p"}, &policyv1.Policy{}, func(p *policyv1.Policy) { p.Spec.Disabled = false }, false)
	s.eventuallyReplicas("p", "disabled-1", "disabled-2")
}

func TestPolicySetPropagatesItsMembers(t *testing.T) {
	s := newScope(t, "set")
	s.clusters("prod", "set-1")
	s.clusters("dev", "set-2")
	s.placement("prod", "prod")
	s.placement("dev", "dev")
	s.policy("a")
	s.policy("b")
	s.create(&policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Name: "baseline", Namespace: s.ns},
		Spec: policyv1beta1.PolicySetSpec{Policies: []policyv1beta1.NonEmptyString{"a", "b", "missing"}}})
	s.binding("baseline", "prod", []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "PolicySet", Name: "baseline"}})
	// a is also bound directly to prod and dev: still one replica per cluster.
	s.binding("a-prod", "prod", policies("a"))
	s.binding("a-dev", "dev", policies("a"))

	s.eventuallyReplicas("a", "set-1", "set-2")
	s.eventuallyReplicas("b", "set-1")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.ElementsMatch(c, []*policyv1.Placement{
			{PlacementBinding: "a-dev", Placement: "dev"}, {PlacementBinding: "a-prod", Placement: "prod"},
			{PlacementBinding: "baseline", Placement: "prod", PolicySet: "baseline"}}, s.root("a").Status.Placement)
	}, timeout, tick)

	// Set status: unknown until the members report, then aggregated.
	set := func() policyv1beta1.PolicySetStatus {
		var ps policyv1beta1.PolicySet
		_ = hub.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "baseline"}, &ps)
		return ps.Status
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := set()
		assert.Equal(c, []policyv1beta1.PolicySetStatusPlacement{{PlacementBinding: "baseline", Placement: "prod"}}, st.Placement)
		assert.Equal(c, policyv1.ComplianceState(""), st.Compliant)
		assert.Contains(c, st.StatusMessage, "Deleted policies: missing")
		assert.Contains(c, st.StatusMessage, "No status provided while awaiting policy status: a, b")
	}, timeout, tick)
	s.report("a", "set-1", policyv1.Compliant, "ok")
	s.report("a", "set-2", policyv1.Compliant, "ok")
	s.report("b", "set-1", policyv1.NonCompliant, "namespaces [prod] not found")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, policyv1.NonCompliant, set().Compliant)
	}, timeout, tick)
	s.report("b", "set-1", policyv1.Compliant, "ok")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, policyv1.Compliant, set().Compliant)
		assert.Equal(c, "Deleted policies: missing", set().StatusMessage)
	}, timeout, tick)

	// b leaves the set: its replica goes; a stays (bound directly).
	update(s, client.ObjectKey{Namespace: s.ns, Name: "baseline"}, &policyv1beta1.PolicySet{}, func(ps *policyv1beta1.PolicySet) {
		ps.Spec.Policies = []policyv1beta1.NonEmptyString{"a"}
	}, false)
	s.eventuallyReplicas("b")
	s.eventuallyReplicas("a", "set-1", "set-2")
}

func TestBindingOverridesAndSubFilter(t *testing.T) {
	s := newScope(t, "override")
	s.clusters("prod", "override-1", "override-2")
	s.clusters("canary", "override-3")
	s.placement("prod", "prod")
	s.placement("canary", "canary")
	s.policy("p")
	s.binding("p", "prod", policies("p"))
	// Enforce on the canary clusters, but only those already bound: none yet.
	s.binding("p-enforce", "canary", policies("p"), func(b *policyv1.PlacementBinding) {
		b.SubFilter = policyv1.Restricted
		b.BindingOverrides.RemediationAction = "enforce"
	})
	s.eventuallyReplicas("p", "override-1", "override-2")
	action := func(cluster string) policyv1.RemediationAction {
		if r := s.replica("p", cluster); r != nil {
			return r.Spec.RemediationAction
		}
		return "<none>"
	}
	assert.Equal(t, policyv1.RemediationAction("inform"), action("override-1"))

	// override-2 becomes a canary: it leaves prod (and the policy), so the
	// restricted binding does not place it.
	s.relabel("override-2", "canary")
	s.eventuallyReplicas("p", "override-1")

	// A second, unrestricted binding of the canaries: now they are bound, and
	// the restricted binding enforces them; prod stays inform.
	s.binding("p-canary", "canary", policies("p"))
	s.eventuallyReplicas("p", "override-1", "override-2", "override-3")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, policyv1.RemediationAction("enforce"), action("override-2"))
		assert.Equal(c, policyv1.RemediationAction("enforce"), action("override-3"))
		assert.Equal(c, policyv1.RemediationAction("inform"), action("override-1"))
	}, timeout, tick)

	// The override goes: back to inform.
	update(s, client.ObjectKey{Namespace: s.ns, Name: "p-enforce"}, &policyv1.PlacementBinding{}, func(b *policyv1.PlacementBinding) {
		b.BindingOverrides.RemediationAction = ""
	}, false)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, policyv1.RemediationAction("inform"), action("override-3"))
	}, timeout, tick)

	// The apiserver refuses what OCM's CRD refuses.
	bad := &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: s.ns},
		PlacementRef: policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: "prod"},
		Subjects:     policies("p"), SubFilter: "everything"}
	err := hub.Create(s.ctx, bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "subFilter")
	bad.SubFilter, bad.BindingOverrides.RemediationAction = "", "inform"
	err = hub.Create(s.ctx, bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bindingOverrides.remediationAction")
	bad.BindingOverrides.RemediationAction, bad.Subjects = "", nil
	require.Error(t, hub.Create(s.ctx, bad), "a binding without subjects")
}

func TestStatusRoundTripWithPrecedence(t *testing.T) {
	s := newScope(t, "status")
	s.clusters("prod", "status-1", "status-2")
	s.placement("prod", "prod")
	s.policy("p")
	s.binding("p", "prod", policies("p"))
	s.eventuallyReplicas("p", "status-1", "status-2")

	rootStatus := func(c *assert.CollectT, want policyv1.ComplianceState, perCluster ...policyv1.ComplianceState) {
		st := s.root("p").Status
		assert.Equal(c, want, st.ComplianceState)
		if assert.Len(c, st.Status, 2) {
			for i, cl := range []string{"status-1", "status-2"} {
				assert.Equal(c, policyv1.CompliancePerClusterStatus{ClusterName: cl, ClusterNamespace: cl, ComplianceState: perCluster[i]}, *st.Status[i])
			}
		}
		assert.Equal(c, []*policyv1.Placement{{PlacementBinding: "p", Placement: "prod"}}, st.Placement)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) { rootStatus(c, "", "", "") }, timeout, tick)

	s.report("p", "status-1", policyv1.Compliant, "namespaces [prod] found as specified")
	require.EventuallyWithT(t, func(c *assert.CollectT) { rootStatus(c, "", policyv1.Compliant, "") }, timeout, tick, "unknown beats Compliant")
	s.report("p", "status-2", policyv1.Pending, "waiting on dependencies")
	require.EventuallyWithT(t, func(c *assert.CollectT) { rootStatus(c, policyv1.Pending, policyv1.Compliant, policyv1.Pending) }, timeout, tick)
	s.report("p", "status-1", policyv1.NonCompliant, "namespaces [prod] not found")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		rootStatus(c, policyv1.NonCompliant, policyv1.NonCompliant, policyv1.Pending)
	}, timeout, tick)
	s.report("p", "status-1", policyv1.Compliant, "ok")
	s.report("p", "status-2", policyv1.Compliant, "ok")
	require.EventuallyWithT(t, func(c *assert.CollectT) { rootStatus(c, policyv1.Compliant, policyv1.Compliant, policyv1.Compliant) }, timeout, tick)

	// A spec change rewrites the replicas' spec but keeps the spoke's status.
	update(s, client.ObjectKey{Namespace: s.ns, Name: "p"}, &policyv1.Policy{}, func(p *policyv1.Policy) {
		p.Annotations[policyv1.ControlsAnnotation] = "CM-2 Baseline Configuration"
	}, false)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r := s.replica("p", "status-1")
		if assert.NotNil(c, r) {
			assert.Equal(c, "CM-2 Baseline Configuration", r.Annotations[policyv1.ControlsAnnotation])
			assert.Equal(c, policyv1.Compliant, r.Status.ComplianceState)
		}
	}, timeout, tick)

	// The hub's metrics follow: policy_governance_info for the root and per replica.
	m := propagator.DefaultMetrics()
	gauge := func(typ, cluster string) float64 {
		return testutil.ToFloat64(m.GovernanceInfo.WithLabelValues(typ, "p", s.ns, cluster))
	}
	s.report("p", "status-2", policyv1.NonCompliant, "namespaces [prod] not found")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, 1.0, gauge("root", ""))
		assert.Equal(c, 0.0, gauge("propagated", "status-1"))
		assert.Equal(c, 1.0, gauge("propagated", "status-2"))
	}, timeout, tick)
	s.report("p", "status-2", policyv1.Pending, "waiting")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, -1.0, gauge("root", ""))
		assert.Equal(c, -1.0, gauge("propagated", "status-2"))
	}, timeout, tick)
	assert.Positive(t, testutil.CollectAndCount(m.Latency))
	// A cluster that leaves drops its series.
	require.NoError(t, hub.Delete(s.ctx, &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: s.ns}}))
	s.eventuallyReplicas("p")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		n, _ := governanceSeries(map[string]string{"policy_namespace": s.ns, "type": "propagated"})
		assert.Zero(c, n)
	}, timeout, tick)
}

func TestReplicaTamperRepaired(t *testing.T) {
	s := newScope(t, "tamper")
	s.clusters("prod", "tamper-1")
	s.placement("prod", "prod")
	s.policy("p")
	s.binding("p", "prod", policies("p"))
	s.eventuallyReplicas("p", "tamper-1")
	key := client.ObjectKey{Namespace: "tamper-1", Name: "tamper.p"}

	// Someone edits the replica: spec and labels come back.
	update(s, key, &policyv1.Policy{}, func(p *policyv1.Policy) {
		p.Spec.RemediationAction = "enforce"
		p.Spec.PolicyTemplates = []*policyv1.PolicyTemplate{}
		p.Labels["sneaky"] = "yes"
	}, false)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r := s.replica("p", "tamper-1")
		if assert.NotNil(c, r) {
			assert.Equal(c, policyv1.RemediationAction("inform"), r.Spec.RemediationAction)
			assert.Len(c, r.Spec.PolicyTemplates, 1)
			assert.NotContains(c, r.Labels, "sneaky")
		}
	}, timeout, tick)

	// Someone deletes it: it is recreated.
	old := s.replica("p", "tamper-1")
	require.NoError(t, hub.Delete(s.ctx, old))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r := s.replica("p", "tamper-1")
		if assert.NotNil(c, r) {
			assert.NotEqual(c, old.UID, r.UID)
		}
	}, timeout, tick)

	// Someone plants a replica in a cluster the policy does not go to: removed.
	s.clusters("dev", "tamper-2")
	planted := propagator.Replica(s.root("p"), "tamper-2", "enforce")
	s.create(planted)
	s.eventuallyReplicas("p", "tamper-1")
}

func TestBrokenBindingsDoNotStopOthers(t *testing.T) {
	s := newScope(t, "broken")
	s.clusters("prod", "broken-1")
	s.placement("prod", "prod")
	s.policy("p")
	s.policy("q")
	// p: one binding to a Placement that does not exist, one PlacementRule, one good.
	s.binding("p-missing", "nowhere", policies("p"))
	s.binding("p-rule", "rule", policies("p"), func(b *policyv1.PlacementBinding) {
		b.PlacementRef.APIGroup, b.PlacementRef.Kind = "apps.open-cluster-management.io", "PlacementRule"
	})
	s.binding("p-good", "prod", policies("p"))
	// q: only the broken binding; r: a name too long for the root-policy label.
	s.binding("q", "nowhere", policies("q"))
	long := "a-policy-name-that-with-its-namespace-is-longer-than-63-chars"
	s.policy(long)
	s.binding("long", "prod", policies(long))
	s.policy("fine")
	s.binding("fine", "prod", policies("fine"))

	s.eventuallyReplicas("p", "broken-1")
	s.eventuallyReplicas("fine", "broken-1")
	s.eventuallyReplicas("q")
	s.eventuallyReplicas(long)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		msgs := s.warnings("p", propagator.ReasonBindingProblem)
		assert.Contains(c, msgs, "PlacementBinding p-missing: Placement broken/nowhere not found: it places the policy nowhere until it exists")
		found := false
		for _, m := range msgs {
			found = found || assert.ObjectsAreEqual(m, "PlacementBinding p-rule: placementRef rule PlacementRule.apps.open-cluster-management.io is not supported: bind a Placement (apiGroup cluster.open-cluster-management.io)")
		}
		assert.True(c, found, "PlacementRule warning in %v", msgs)
		assert.NotEmpty(c, s.warnings(long, propagator.ReasonPolicyProblem))
	}, timeout, tick)
	assert.ElementsMatch(t, []*policyv1.Placement{{PlacementBinding: "p-good", Placement: "prod"},
		{PlacementBinding: "p-missing", Placement: "nowhere"}, {PlacementBinding: "p-rule", PlacementRule: "rule"}}, s.root("p").Status.Placement)

	// A replica that cannot be written (its cluster has no namespace) is that
	// cluster's problem only.
	s.create(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "broken-2",
		Labels: map[string]string{clusterv1beta2.ClusterSetLabel: s.ns, "env": "prod"}}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})
	require.NoError(t, testenv.MarkAccepted(s.ctx, hub, "broken-2"))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		msgs := s.warnings("fine", propagator.ReasonReplicaFailed)
		if assert.NotEmpty(c, msgs) {
			assert.Contains(c, msgs[0], "replica for cluster broken-2: ")
			assert.Contains(c, msgs[0], "not found")
		}
		st := s.root("fine").Status
		assert.Len(c, st.Status, 2, "the cluster without a replica is listed, unknown")
	}, timeout, tick)
	s.eventuallyReplicas("fine", "broken-1")
}

// TestLabelledDecoyIsNoReplica: a Policy that only carries a root's replica
// labels (another name in the cluster namespace, or any name in a namespace
// of the author's) is not the root's replica: its status does not count
// towards the root's, and the propagator neither rewrites nor removes it.
func TestLabelledDecoyIsNoReplica(t *testing.T) {
	s := newScope(t, "decoy")
	s.clusters("prod", "decoy-1")
	s.placement("prod", "prod")
	s.policy("p")
	s.binding("p", "prod", policies("p"))
	s.eventuallyReplicas("p", "decoy-1")
	s.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "decoy-team"}})

	labels := func(cluster string) map[string]string {
		return map[string]string{policyv1.RootPolicyLabel: "decoy.p", policyv1.ClusterNameLabel: cluster, policyv1.ClusterNamespaceLabel: cluster}
	}
	decoys := []*policyv1.Policy{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "decoy-1", Name: "a-decoy", Labels: labels("decoy-1")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "decoy-team", Name: "decoy.p", Labels: labels("decoy-1")}},
	}
	for _, d := range decoys {
		d.Spec = policyv1.PolicySpec{RemediationAction: "enforce", PolicyTemplates: []*policyv1.PolicyTemplate{{ObjectDefinition: configPolicy("decoy-cfg")}}}
		s.create(d)
		update(s, client.ObjectKeyFromObject(d), &policyv1.Policy{}, func(p *policyv1.Policy) { p.Status.ComplianceState = policyv1.Compliant }, true)
	}
	s.report("p", "decoy-1", policyv1.NonCompliant, "namespaces [prod] not found")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		st := s.root("p").Status
		assert.Equal(c, policyv1.NonCompliant, st.ComplianceState)
		if assert.Len(c, st.Status, 1) {
			assert.Equal(c, policyv1.CompliancePerClusterStatus{ClusterName: "decoy-1", ClusterNamespace: "decoy-1", ComplianceState: policyv1.NonCompliant}, *st.Status[0])
		}
	}, timeout, tick)
	// Touch the root: a reconcile after the decoys exist must leave them be.
	update(s, client.ObjectKey{Namespace: s.ns, Name: "p"}, &policyv1.Policy{}, func(p *policyv1.Policy) {
		p.Annotations[policyv1.ControlsAnnotation] = "CM-2 Baseline Configuration"
	}, false)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r := s.replica("p", "decoy-1")
		if assert.NotNil(c, r) {
			assert.Equal(c, "CM-2 Baseline Configuration", r.Annotations[policyv1.ControlsAnnotation])
		}
	}, timeout, tick)
	assert.Equal(t, policyv1.NonCompliant, s.root("p").Status.ComplianceState)
	for _, d := range decoys {
		var got policyv1.Policy
		require.NoError(t, hub.Get(s.ctx, client.ObjectKeyFromObject(d), &got), "the decoy %s/%s was removed", d.Namespace, d.Name)
		assert.Equal(t, policyv1.RemediationAction("enforce"), got.Spec.RemediationAction, "the decoy %s/%s was rewritten", d.Namespace, d.Name)
		assert.Equal(t, policyv1.Compliant, got.Status.ComplianceState)
	}
}
