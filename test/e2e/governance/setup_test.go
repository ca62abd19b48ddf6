package governance_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// policyNamespace creates namespace ns on the hub with Placement "all" of
// every cluster.
func policyNamespace(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, hubCli.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, hubCli.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "global", Namespace: ns},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"}}))
	require.NoError(t, hubCli.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: ns},
		Spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{"global"}}}))
}

// bindPolicy creates policy name in ns with the templates (JSON or YAML
// objects) and binds it to Placement "all"; it returns the binding.
func bindPolicy(t *testing.T, ns, name string, remediation policyv1.RemediationAction, templates ...string) *policyv1.PlacementBinding {
	t.Helper()
	ctx := context.Background()
	p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: policyv1.PolicySpec{RemediationAction: remediation}}
	for _, tpl := range templates {
		raw, err := yamlToJSON(tpl)
		require.NoError(t, err)
		p.Spec.PolicyTemplates = append(p.Spec.PolicyTemplates, &policyv1.PolicyTemplate{ObjectDefinition: runtime.RawExtension{Raw: raw}})
	}
	require.NoError(t, hubCli.Create(ctx, p))
	b := &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: "b-" + name, Namespace: ns},
		PlacementRef: policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: "all"},
		Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: name}}}
	require.NoError(t, hubCli.Create(ctx, b))
	return b
}

// replicaDetail is the newest history message of template on cluster's
// replica of ns/name, with the replica's compliance.
func replicaDetail(cluster, ns, name, template string) (policyv1.ComplianceState, string) {
	var rep policyv1.Policy
	if err := hubCli.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: ns + "." + name}, &rep); err != nil {
		return "", ""
	}
	for _, d := range rep.Status.Details {
		if d != nil && d.TemplateMeta.Name == template && len(d.History) > 0 {
			return rep.Status.ComplianceState, d.History[0].Message
		}
	}
	return rep.Status.ComplianceState, ""
}

func clientKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
