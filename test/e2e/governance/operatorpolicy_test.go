package governance_test

import (
	"context"
	"os"
	"strings"
	"testing"

	olmcrds "github.com/operator-framework/api/crds"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
	"flotilla.dev/flotilla/policy/operatorpolicy"
)

// olmCli is a client of cluster i that knows OLM's types.
func olmCli(t *testing.T, i int) client.Client {
	c, err := client.New(env.Clusters[i].Config, client.Options{Scheme: operatorpolicy.Scheme()})
	require.NoError(t, err)
	return c
}

// TestComplianceOperatorPolicy: policy-collection's compliance-operator
// policy (NIST CA-2, CA-7), unchanged, evaluates through the governance
// addons. cluster1 has no OLM: its OperatorPolicy is NonCompliant saying
// so. cluster2 gets OLM's CRDs (no OLM runs: this test plays OLM where it
// needs to) and the product ClusterClaim OCM's klusterlet makes, which the
// policy's managed-cluster template looks up: inform reports the operator
// missing in upstream's words; enforce creates the OperatorGroup and the
// Subscription (its config resolved from the template), and approves OLM's
// InstallPlan.
func TestComplianceOperatorPolicy(t *testing.T) {
	ctx := context.Background()
	const ns = "operators"
	policyNamespace(t, ns)
	oc := olmCli(t, 1)
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{olmcrds.Subscription(), olmcrds.OperatorGroup(), olmcrds.InstallPlan(),
		olmcrds.ClusterServiceVersion(), olmcrds.CatalogSource()} {
		require.NoError(t, client.IgnoreAlreadyExists(oc.Create(ctx, crd)))
	}
	require.NoError(t, client.IgnoreAlreadyExists(oc.Create(ctx, &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: "product.open-cluster-management.io"},
		Spec: clusterv1alpha1.ClusterClaimSpec{Value: "Other"}})))

	raw, err := os.ReadFile("testdata/policy-compliance-operator-install.yaml")
	require.NoError(t, err)
	var root policyv1.Policy
	require.NoError(t, yaml.Unmarshal(raw, &root))
	root.Namespace = ns
	require.NoError(t, hubCli.Create(ctx, &root))
	require.NoError(t, hubCli.Create(ctx, &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: "b-comp", Namespace: ns},
		PlacementRef: policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: "all"},
		Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: root.Name}}}))

	const tmpl = "operatorpolicy-comp-operator"
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		state, msg := replicaDetail("cluster1", ns, root.Name, tmpl)
		assert.Equal(c, policyv1.NonCompliant, state)
		assert.Equal(c, "NonCompliant; "+operatorpolicy.NoOLMMessage, msg)
	}, timeout, tick)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, msg := replicaDetail("cluster2", ns, root.Name, tmpl)
		assert.Equal(c, "NonCompliant; the policy spec is valid, the OperatorGroup required by the policy was not found, the Subscription required by the policy was not found, "+
			"there are no relevant InstallPlans in the namespace, a relevant installed ClusterServiceVersion could not be found, no CRDs were found for the operator, "+
			"there are no relevant deployments because the ClusterServiceVersion is missing, CatalogSource 'redhat-operators' was not found", msg)
	}, timeout, tick)

	// Enforce: the namespace, the OperatorGroup and the Subscription on cluster2.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"remediationAction":"enforce"}}`))
	require.NoError(t, hubCli.Patch(ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: root.Name, Namespace: ns}}, patch))
	var sub operatorsv1alpha1.Subscription
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, oc.Get(ctx, client.ObjectKey{Namespace: "openshift-compliance", Name: "compliance-operator"}, &sub))
	}, timeout, tick)
	assert.Equal(t, "redhat-operators", sub.Spec.CatalogSource)
	assert.Equal(t, operatorsv1alpha1.ApprovalManual, sub.Spec.InstallPlanApproval)
	require.NotNil(t, sub.Spec.Config, "config resolved from the template")
	var og operatorsv1.OperatorGroup
	require.NoError(t, oc.Get(ctx, client.ObjectKey{Namespace: "openshift-compliance", Name: "compliance-operator"}, &og))
	assert.Equal(t, []string{"openshift-compliance"}, og.Spec.TargetNamespaces)
	var local policyv1beta1.OperatorPolicy
	require.NoError(t, oc.Get(ctx, client.ObjectKey{Namespace: "cluster2", Name: tmpl}, &local))
	assert.Equal(t, policyv1.RemediationAction("enforce"), local.Spec.RemediationAction)

	// OLM (played here) offers the InstallPlan: approved (upgradeApproval Automatic).
	ip := &operatorsv1alpha1.InstallPlan{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-compliance", Name: "install-e2e",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "operators.coreos.com/v1alpha1", Kind: "Subscription", Name: sub.Name, UID: sub.UID}}},
		Spec: operatorsv1alpha1.InstallPlanSpec{ClusterServiceVersionNames: []string{"compliance-operator.v1.6.0"}, Approval: operatorsv1alpha1.ApprovalManual}}
	require.NoError(t, oc.Create(ctx, ip))
	ip.Status = operatorsv1alpha1.InstallPlanStatus{Phase: operatorsv1alpha1.InstallPlanPhaseRequiresApproval, CatalogSources: []string{}}
	require.NoError(t, oc.Status().Update(ctx, ip))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, oc.Get(ctx, client.ObjectKeyFromObject(ip), ip))
		assert.True(c, ip.Spec.Approved)
	}, timeout, tick)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		rep, msg := replicaDetail("cluster2", ns, root.Name, tmpl)
		assert.Equal(c, policyv1.NonCompliant, rep)
		assert.True(c, strings.Contains(msg, "the InstallPlan for compliance-operator.v1.6.0 was approved") ||
			strings.Contains(msg, "no InstallPlans requiring approval were found"), msg)
	}, timeout, tick)

	// cluster1 still has no OLM: never a silent Compliant.
	state, msg := replicaDetail("cluster1", ns, root.Name, tmpl)
	assert.Equal(t, policyv1.NonCompliant, state)
	assert.Contains(t, msg, "OLM")
}
