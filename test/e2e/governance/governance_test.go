package governance_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/governance"
	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/addonagent"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/agent"
	"flotilla.dev/flotilla/policy/hubtemplate"
)

const rootNs = "policies"

func spokeCli(t *testing.T, i int) client.Client {
	c, err := client.New(env.Clusters[i].Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	return c
}

const cfgPolicy = `{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy",
 "metadata":{"name":"policy-namespace-prod"},
 "spec":{"remediationAction":"inform","severity":"low",
  "object-templates":[{"complianceType":"musthave","objectDefinition":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"gov-prod"}}}]}}`

// TestGovernanceRoundTrip: a Policy bound to a Placement of both clusters is
// replicated on the hub, copied to each managed cluster by the framework
// agent, its ConfigurationPolicy created and evaluated by the
// config-policy-controller agent; NonCompliant (inform) reaches the hub
// replica with history and the root; enforced, Compliant on both sides; a
// deleted ConfigurationPolicy is recreated; the replica gone from the hub
// takes the spoke copy and its template with it.
func TestGovernanceRoundTrip(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, hubCli.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rootNs}}))
	require.NoError(t, hubCli.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "global", Namespace: rootNs},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"}}))
	require.NoError(t, hubCli.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: rootNs},
		Spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{"global"}}}))
	root := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-namespace", Namespace: rootNs, Annotations: map[string]string{
			policyv1.StandardsAnnotation: "NIST SP 800-53", policyv1.CategoriesAnnotation: "CM Configuration Management",
			policyv1.ControlsAnnotation: "CM-2 Baseline Configuration"}},
		Spec: policyv1.PolicySpec{RemediationAction: policyv1.Inform, PolicyTemplates: []*policyv1.PolicyTemplate{
			{ObjectDefinition: runtime.RawExtension{Raw: []byte(cfgPolicy)}}}},
	}
	require.NoError(t, hubCli.Create(ctx, root))
	binding := &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: "binding-policy-namespace", Namespace: rootNs},
		PlacementRef: policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: "all"},
		Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: root.Name}}}
	require.NoError(t, hubCli.Create(ctx, binding))

	replica := rootNs + "." + root.Name
	// Both agents of both clusters report their lease through their klusterlet.
	for _, cluster := range []string{"cluster1", "cluster2"} {
		for _, addon := range []string{governance.FrameworkName, governance.ConfigPolicyName} {
			require.Eventually(t, func() bool {
				var m addonv1alpha1.ManagedClusterAddOn
				return hubCli.Get(ctx, client.ObjectKey{Namespace: cluster, Name: addon}, &m) == nil &&
					meta.IsStatusConditionTrue(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
			}, timeout, tick, "%s/%s never Available", cluster, addon)
		}
	}
	for i, cluster := range []string{"cluster1", "cluster2"} {
		sc := spokeCli(t, i)
		// Copied to the spoke, its template created and owned by the copy.
		var cp policyv1.ConfigurationPolicy
		require.Eventually(t, func() bool {
			return sc.Get(ctx, client.ObjectKey{Namespace: cluster, Name: "policy-namespace-prod"}, &cp) == nil
		}, timeout, tick, "ConfigurationPolicy never created on %s", cluster)
		var local policyv1.Policy
		require.NoError(t, sc.Get(ctx, client.ObjectKey{Namespace: cluster, Name: replica}, &local))
		assert.Equal(t, "NIST SP 800-53", local.Annotations[policyv1.StandardsAnnotation])
		require.Len(t, cp.OwnerReferences, 1)
		assert.Equal(t, local.UID, cp.OwnerReferences[0].UID)
		assert.Equal(t, replica, cp.Labels[agent.PolicyLabel])

		// NonCompliant on the hub replica, with history. The status may be
		// written before the compliance event that makes its history has
		// arrived (the agent waits for it at most maxEventLag): the history
		// follows.
		rep := eventuallyReplica(t, cluster, replica, policyv1.NonCompliant)
		require.Len(t, rep.Status.Details, 1)
		assert.Equal(t, "policy-namespace-prod", rep.Status.Details[0].TemplateMeta.Name)
		require.Eventually(t, func() bool {
			rep = eventuallyReplica(t, cluster, replica, policyv1.NonCompliant)
			return len(rep.Status.Details[0].History) > 0
		}, timeout, tick, "the hub replica on %s has its history", cluster)
		assert.True(t, strings.HasPrefix(rep.Status.Details[0].History[0].Message, "NonCompliant"), rep.Status.Details[0].History[0].Message)
		assert.LessOrEqual(t, len(rep.Status.Details[0].History), agent.MaxHistory)
	}
	eventuallyRoot(t, root.Name, policyv1.NonCompliant)

	// Enforce: the engine creates the namespace, Compliant everywhere.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"remediationAction":"enforce"}}`))
	require.NoError(t, hubCli.Patch(ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: root.Name, Namespace: rootNs}}, patch))
	for i, cluster := range []string{"cluster1", "cluster2"} {
		rep := eventuallyReplica(t, cluster, replica, policyv1.Compliant)
		h := rep.Status.Details[0].History
		require.GreaterOrEqual(t, len(h), 2)
		assert.True(t, strings.HasPrefix(h[0].Message, "Compliant"), "newest first: %v", h)
		var local policyv1.Policy
		require.NoError(t, spokeCli(t, i).Get(ctx, client.ObjectKey{Namespace: cluster, Name: replica}, &local))
		assert.Equal(t, policyv1.Compliant, local.Status.ComplianceState)
		var cp policyv1.ConfigurationPolicy
		require.NoError(t, spokeCli(t, i).Get(ctx, client.ObjectKey{Namespace: cluster, Name: "policy-namespace-prod"}, &cp))
		assert.Equal(t, policyv1.RemediationAction("enforce"), cp.Spec.RemediationAction)
		_, err := kubernetes.NewForConfigOrDie(env.Clusters[i].Config).CoreV1().Namespaces().Get(ctx, "gov-prod", metav1.GetOptions{})
		assert.NoError(t, err)
	}
	eventuallyRoot(t, root.Name, policyv1.Compliant)

	// Tamper on the spoke: the deleted template comes back.
	sc := spokeCli(t, 0)
	var cp policyv1.ConfigurationPolicy
	require.NoError(t, sc.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "policy-namespace-prod"}, &cp))
	require.NoError(t, sc.Delete(ctx, &cp))
	require.Eventually(t, func() bool {
		var again policyv1.ConfigurationPolicy
		return sc.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "policy-namespace-prod"}, &again) == nil && again.UID != cp.UID
	}, timeout, tick, "deleted ConfigurationPolicy not recreated")

	// The replica goes on the hub (binding deleted): the copy and its template go.
	require.NoError(t, hubCli.Delete(ctx, binding))
	require.Eventually(t, func() bool {
		err1 := sc.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: replica}, &policyv1.Policy{})
		err2 := sc.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "policy-namespace-prod"}, &policyv1.ConfigurationPolicy{})
		return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2)
	}, timeout, tick, "spoke copy or its template not removed")
}

func eventuallyReplica(t *testing.T, cluster, name string, want policyv1.ComplianceState) *policyv1.Policy {
	t.Helper()
	var rep policyv1.Policy
	require.Eventually(t, func() bool {
		return hubCli.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: name}, &rep) == nil &&
			rep.Status.ComplianceState == want && len(rep.Status.Details) == 1
	}, timeout, tick, "hub replica %s/%s never %s (now %q)", cluster, name, want, rep.Status.ComplianceState)
	return &rep
}

func eventuallyRoot(t *testing.T, name string, want policyv1.ComplianceState) {
	t.Helper()
	var root policyv1.Policy
	require.Eventually(t, func() bool {
		return hubCli.Get(context.Background(), client.ObjectKey{Namespace: rootNs, Name: name}, &root) == nil &&
			root.Status.ComplianceState == want && len(root.Status.Status) == 2
	}, timeout, tick, "root policy never %s (now %q)", want, root.Status.ComplianceState)
}

// TestFrameworkCredentialRefusals: cluster1's framework credential reads and
// writes the status of its own replicas only: another cluster's replicas,
// root policies and replica specs are refused (403).
func TestFrameworkCredentialRefusals(t *testing.T) {
	ctx := context.Background()
	sk := kubernetes.NewForConfigOrDie(env.Clusters[0].Config)
	var cred *addonagent.HubCredential
	require.Eventually(t, func() bool {
		var err error
		cred, err = addonagent.ReadHubCredential(ctx, sk, ocm.DefaultAddonInstallNamespace, governance.FrameworkName)
		return err == nil
	}, timeout, tick)
	assert.Contains(t, cred.AgentName, "governance-policy-framework")
	c, err := client.New(cred.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)

	// Its own namespace: allowed (the agent's rights are bound once the addon registered).
	require.Eventually(t, func() bool {
		return c.List(ctx, &policyv1.PolicyList{}, client.InNamespace("cluster1")) == nil
	}, timeout, tick)
	forbidden := func(err error, what string) {
		t.Helper()
		assert.True(t, apierrors.IsForbidden(err), "%s: want 403, got %v", what, err)
	}
	forbidden(c.List(ctx, &policyv1.PolicyList{}, client.InNamespace("cluster2")), "list cluster2's replicas")
	forbidden(c.Get(ctx, client.ObjectKey{Namespace: "cluster2", Name: "x"}, &policyv1.Policy{}), "get a cluster2 replica")
	forbidden(c.List(ctx, &policyv1.PolicyList{}), "list policies cluster-wide")
	forbidden(c.Create(ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "evil", Namespace: rootNs},
		Spec: policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{}}}), "create a root policy")
	forbidden(c.Patch(ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "policy-namespace", Namespace: rootNs}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"disabled":true}}`))), "patch a root policy")
	forbidden(c.Status().Patch(ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "policy-namespace", Namespace: rootNs}},
		client.RawPatch(types.MergePatchType, []byte(`{"status":{"compliant":"Compliant"}}`))), "write a root policy's status")
	forbidden(c.Patch(ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "policies.policy-namespace", Namespace: "cluster1"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"disabled":true}}`))), "change its own replica's spec")
	forbidden(c.Status().Patch(ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "policies.policy-namespace", Namespace: "cluster2"}},
		client.RawPatch(types.MergePatchType, []byte(`{"status":{"compliant":"Compliant"}}`))), "write cluster2's replica status")
	// Secrets: its own cluster's encryption key only.
	forbidden(c.Get(ctx, client.ObjectKey{Namespace: "cluster2", Name: hubtemplate.KeySecret}, &corev1.Secret{}), "get cluster2's encryption key")
	forbidden(c.List(ctx, &corev1.SecretList{}, client.InNamespace("cluster1")), "list the Secrets of its namespace")
	forbidden(c.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "other"}, &corev1.Secret{}), "get another Secret of its namespace")
	err = c.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: hubtemplate.KeySecret}, &corev1.Secret{})
	assert.False(t, apierrors.IsForbidden(err), "its own encryption key: %v", err)

	// The config-policy-controller's credential reads nothing on the hub.
	var cpCred *addonagent.HubCredential
	require.Eventually(t, func() bool {
		var err error
		cpCred, err = addonagent.ReadHubCredential(ctx, sk, ocm.DefaultAddonInstallNamespace, governance.ConfigPolicyName)
		return err == nil
	}, timeout, tick)
	cp, err := client.New(cpCred.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	forbidden(cp.List(ctx, &policyv1.PolicyList{}, client.InNamespace("cluster1")), "config-policy-controller lists replicas")
	forbidden(cp.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: hubtemplate.KeySecret}, &corev1.Secret{}), "config-policy-controller reads the key")
	forbidden(cp.Create(ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "evil", Namespace: rootNs},
		Spec: policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{}}}), "config-policy-controller creates a root policy")
}

// TestDependencies: a template whose policy depends on another policy being
// Compliant is not created and reports Pending (on the hub replica too) until
// the dependency is Compliant; an ignorePending template does not hold the
// policy Pending.
func TestDependencies(t *testing.T) {
	ctx := context.Background()
	ns := "deps"
	require.NoError(t, hubCli.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, hubCli.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "global", Namespace: ns},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"}}))
	require.NoError(t, hubCli.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: ns},
		Spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{"global"}}}))
	tpl := func(name, nsName string) runtime.RawExtension {
		return runtime.RawExtension{Raw: []byte(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy",
 "metadata":{"name":"` + name + `"},"spec":{"remediationAction":"inform",
  "object-templates":[{"complianceType":"musthave","objectDefinition":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + nsName + `"}}}]}}`)}
	}
	base := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "base", Namespace: ns},
		Spec: policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{{ObjectDefinition: tpl("base-ns", "gov-dep")}}}}
	user := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: ns},
		Spec: policyv1.PolicySpec{
			Dependencies:    []policyv1.PolicyDependency{{TypeMeta: metav1.TypeMeta{APIVersion: policyv1.GroupVersion.String(), Kind: "Policy"}, Name: "base", Compliance: policyv1.Compliant}},
			PolicyTemplates: []*policyv1.PolicyTemplate{{ObjectDefinition: tpl("user-ns", "gov-dep")}}}}
	relaxed := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "relaxed", Namespace: ns},
		Spec: policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{
			{ObjectDefinition: tpl("relaxed-wait", "gov-dep"), IgnorePending: true, ExtraDependencies: []policyv1.PolicyDependency{
				{TypeMeta: metav1.TypeMeta{APIVersion: policyv1.GroupVersion.String(), Kind: "Policy"}, Name: "base", Compliance: policyv1.Compliant}}},
			{ObjectDefinition: tpl("relaxed-default", "default")}}}}
	for _, p := range []*policyv1.Policy{base, user, relaxed} {
		require.NoError(t, hubCli.Create(ctx, p))
		require.NoError(t, hubCli.Create(ctx, &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: "b-" + p.Name, Namespace: ns},
			PlacementRef: policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: "all"},
			Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: p.Name}}}))
	}
	eventuallyReplica(t, "cluster1", ns+".base", policyv1.NonCompliant)
	eventuallyReplica(t, "cluster1", ns+".user", policyv1.Pending)
	// Until the spoke has base's replica the message says it is not found;
	// then it names base's state.
	var rep policyv1.Policy
	require.Eventually(t, func() bool {
		return hubCli.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: ns + ".user"}, &rep) == nil &&
			len(rep.Status.Details) == 1 && len(rep.Status.Details[0].History) > 0 &&
			strings.Contains(rep.Status.Details[0].History[0].Message, "Pending; dependencies not satisfied: Policy base is NonCompliant, not Compliant")
	}, timeout, tick, "user replica's latest message: %+v", rep.Status.Details)
	sc := spokeCli(t, 0)
	assert.True(t, apierrors.IsNotFound(sc.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "user-ns"}, &policyv1.ConfigurationPolicy{})),
		"a template waiting on its dependencies is not created")
	// ignorePending: the other template decides.
	var relaxedRep policyv1.Policy
	require.Eventually(t, func() bool {
		return hubCli.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: ns + ".relaxed"}, &relaxedRep) == nil &&
			relaxedRep.Status.ComplianceState == policyv1.Compliant && len(relaxedRep.Status.Details) == 2 &&
			relaxedRep.Status.Details[0].ComplianceState == policyv1.Pending
	}, timeout, tick, "relaxed policy: %+v", relaxedRep.Status)

	// The dependency becomes Compliant: the template is created and evaluated.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"remediationAction":"enforce"}}`))
	require.NoError(t, hubCli.Patch(ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "base", Namespace: ns}}, patch))
	eventuallyReplica(t, "cluster1", ns+".base", policyv1.Compliant)
	rep = *eventuallyReplica(t, "cluster1", ns+".user", policyv1.Compliant)
	assert.True(t, strings.HasPrefix(rep.Status.Details[0].History[0].Message, "Compliant"), "%v", rep.Status.Details[0].History)
	require.NoError(t, sc.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "user-ns"}, &policyv1.ConfigurationPolicy{}))
}

// TestHubTemplateError: a template the hub could not resolve is not created on
// the managed cluster; the spoke reports the hub's error as the template's
// newest history entry, NonCompliant, beside the template that resolved,
// without the hub and the spoke taking turns rewriting the status.
func TestHubTemplateError(t *testing.T) {
	ctx := context.Background()
	ns := "hubtpl"
	require.NoError(t, hubCli.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, hubCli.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "global", Namespace: ns},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"}}))
	require.NoError(t, hubCli.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: ns},
		Spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{"global"}}}))
	bad := `{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"from-missing"},
 "spec":{"remediationAction":"inform","object-templates":[{"complianceType":"musthave","objectDefinition":{"apiVersion":"v1","kind":"Namespace",
 "metadata":{"name":"{{hub fromConfigMap \"\" \"missing\" \"key\" hub}}"}}}]}}`
	good := `{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"plain"},
 "spec":{"remediationAction":"inform","object-templates":[{"complianceType":"musthave","objectDefinition":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}}]}}`
	p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "tpl", Namespace: ns}, Spec: policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{
		{ObjectDefinition: runtime.RawExtension{Raw: []byte(bad)}}, {ObjectDefinition: runtime.RawExtension{Raw: []byte(good)}}}}}
	require.NoError(t, hubCli.Create(ctx, p))
	require.NoError(t, hubCli.Create(ctx, &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: ns},
		PlacementRef: policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: "all"},
		Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: p.Name}}}))
	var rep policyv1.Policy
	require.Eventually(t, func() bool {
		return hubCli.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: ns + ".tpl"}, &rep) == nil && len(rep.Status.Details) == 2 &&
			rep.Status.Details[1].ComplianceState == policyv1.Compliant
	}, timeout, tick, "spoke report with both templates: %+v", rep.Status)
	assert.Equal(t, policyv1.NonCompliant, rep.Status.ComplianceState)
	require.NotEmpty(t, rep.Status.Details[0].History)
	assert.True(t, strings.HasPrefix(rep.Status.Details[0].History[0].Message, agent.HubTemplateErrorPrefix), rep.Status.Details[0].History[0].Message)
	sc := spokeCli(t, 0)
	assert.True(t, apierrors.IsNotFound(sc.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "from-missing"}, &policyv1.ConfigurationPolicy{})))
	// Settled: the status stays as the spoke wrote it.
	rv := rep.ResourceVersion
	require.NoError(t, hubCli.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: ns + ".tpl"}, &rep))
	assert.Len(t, rep.Status.Details, 2, "the hub rewrote the spoke's report (resourceVersion %s -> %s)", rv, rep.ResourceVersion)
}
