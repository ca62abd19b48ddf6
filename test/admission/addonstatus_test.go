package admission_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"

	"flotilla.dev/flotilla/internal/ocm"
)

// TestAgentCannotRewriteAddonRegistrations (security review finding F4): a
// managed cluster's agent may update its addons' status conditions, but not
// status.registrations (the subjects the hub approves and signs addon CSRs
// for) nor status.configReferences; the hub may.
func TestAgentCannotRewriteAddonRegistrations(t *testing.T) {
	c := ctx(t)
	admin := kubernetes.NewForConfigOrDie(cpConfig)
	// What OCM grants a cluster's agent on its addons' status, to the agents' group.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "adm-addon-status"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"addon.open-cluster-management.io"}, Resources: []string{"managedclusteraddons", "managedclusteraddons/status"},
			Verbs: []string{"get", "list", "watch", "update", "patch"}}}}
	_, err := admin.RbacV1().ClusterRoles().Create(c, role, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(c, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "adm-addon-status"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: ocm.ManagedClustersGroup}}}, metav1.CreateOptions{})
	require.NoError(t, err)

	hub := addonclient.NewForConfigOrDie(cpConfig).AddonV1alpha1().ManagedClusterAddOns("default")
	agentCfg := rest.CopyConfig(cpConfig)
	agentCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:open-cluster-management:cluster1:agent1",
		Groups: []string{ocm.ManagedClustersGroup, "system:open-cluster-management:cluster1", "system:authenticated"}}
	agent := addonclient.NewForConfigOrDie(agentCfg).AddonV1alpha1().ManagedClusterAddOns("default")

	mca, err := hub.Create(c, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "adm-status"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	declared := addonv1alpha1.RegistrationConfig{SignerName: "example.com/agents",
		Subject: addonv1alpha1.Subject{User: "system:open-cluster-management:cluster:cluster1:addon:adm-status:agent:a"}}
	mca.Status.Registrations = []addonv1alpha1.RegistrationConfig{declared}
	mca, err = hub.UpdateStatus(c, mca, metav1.UpdateOptions{})
	require.NoError(t, err, "the hub (not an agent) writes registrations")

	// The agent reports a condition: admitted.
	mca, err = agent.Get(c, mca.Name, metav1.GetOptions{})
	require.NoError(t, err)
	meta.SetStatusCondition(&mca.Status.Conditions, metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "LeaseUpdated", Message: "renewing"})
	mca, err = agent.UpdateStatus(c, mca, metav1.UpdateOptions{})
	require.NoError(t, err, "an agent may report its addon's conditions")

	refused := func(change func(*addonv1alpha1.ManagedClusterAddOn), field string) {
		t.Helper()
		cur, err := agent.Get(c, mca.Name, metav1.GetOptions{})
		require.NoError(t, err)
		change(cur)
		_, err = agent.UpdateStatus(c, cur, metav1.UpdateOptions{})
		require.Error(t, err, "an agent changed %s", field)
		assert.True(t, apierrors.IsInvalid(err) || apierrors.IsForbidden(err), "%v", err)
		assert.Contains(t, err.Error(), field)
	}
	refused(func(m *addonv1alpha1.ManagedClusterAddOn) {
		m.Status.Registrations[0].Subject.User = "admin"
		m.Status.Registrations[0].Subject.Groups = []string{"system:masters"}
	}, "status.registrations")
	refused(func(m *addonv1alpha1.ManagedClusterAddOn) {
		m.Status.Registrations = append(m.Status.Registrations, addonv1alpha1.RegistrationConfig{SignerName: "example.com/other"})
	}, "status.registrations")
	refused(func(m *addonv1alpha1.ManagedClusterAddOn) { m.Status.Registrations = nil }, "status.registrations")
	refused(func(m *addonv1alpha1.ManagedClusterAddOn) {
		m.Status.ConfigReferences = []addonv1alpha1.ConfigReference{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{
			Group: "addon.open-cluster-management.io", Resource: "addontemplates"}, DesiredConfig: &addonv1alpha1.ConfigSpecHash{
			ConfigReferent: addonv1alpha1.ConfigReferent{Name: "someone-elses"}, SpecHash: "x"}}}
	}, "status.configReferences")

	got, err := hub.Get(c, mca.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []addonv1alpha1.RegistrationConfig{declared}, got.Status.Registrations, "the hub's registrations stand")
}
