package addons_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/internal/ocm"
)

// TestAgentAddonStatusWrites (issue 33 point 5): with the rights the hub
// grants an accepted cluster (its registration RoleBinding, nothing added
// here), the cluster's agent may write into its ManagedClusterAddOns' status
// exactly what upstream's registration agent writes there: a merge patch of
// the status subresource at v1beta1 setting registrations[].kubeClient.driver
// (pkg/registration/spoke/addon ensureDriver) and conditions (its lease and
// CSR controllers). The hub's part of every registration (type, signer,
// subject) and the config references stay refused, at v1beta1 and v1alpha1.
//
// The cluster has no agent running (nobody else writes the addon), and the
// addon is none of the hub's (its addon manager leaves it alone): the hub's
// part is written here as the hub would, by an admin.
func TestAgentAddonStatusWrites(t *testing.T) {
	ctx := context.Background()
	const cluster, name = "upstream-agent", "upstream-driver"
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	require.NoError(t, hubCli.Create(ctx, mc))
	t.Cleanup(func() { _ = hubCli.Delete(context.Background(), mc) })
	require.Eventually(t, func() bool {
		var got clusterv1.ManagedCluster
		return hubCli.Get(ctx, client.ObjectKeyFromObject(mc), &got) == nil &&
			meta.IsStatusConditionTrue(got.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted)
	}, timeout, tick, "the hub grants the accepted cluster its rights")

	admin := addonclient.NewForConfigOrDie(env.Hub.Config)
	kube := addonv1alpha1.RegistrationConfig{SignerName: certificatesv1.KubeAPIServerClientSignerName, Subject: addonv1alpha1.Subject{
		User:   ocm.AddonAgentUser(cluster, name, "agent"),
		Groups: []string{ocm.AddonClusterGroup(cluster, name), ocm.AddonGroupName(name)}}}
	custom := addonv1alpha1.RegistrationConfig{SignerName: customSigner, Subject: addonv1alpha1.Subject{User: "signed-client", Groups: []string{"signed-clients"}}}
	mca, err := admin.AddonV1alpha1().ManagedClusterAddOns(cluster).Create(ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	mca.Status.Registrations = []addonv1alpha1.RegistrationConfig{kube, custom}
	_, err = admin.AddonV1alpha1().ManagedClusterAddOns(cluster).UpdateStatus(ctx, mca, metav1.UpdateOptions{})
	require.NoError(t, err, "the hub writes the registrations")

	// The cluster's agent: its certificate's user and groups.
	agentCfg := rest.CopyConfig(env.Hub.Config)
	agentCfg.Impersonate = rest.ImpersonationConfig{UserName: ocm.GroupPrefix + cluster + ":agent",
		Groups: []string{ocm.GroupPrefix + cluster, ocm.ManagedClustersGroup, "system:authenticated"}}
	agent := addonclient.NewForConfigOrDie(agentCfg)
	v1beta1 := agent.AddonV1beta1().ManagedClusterAddOns(cluster)

	// patch sends what upstream's patcher sends: a merge patch of the status
	// subresource whose registrations and conditions are the agent's copy,
	// changed.
	patch := func(change func(*addonv1beta1.ManagedClusterAddOnStatus)) error {
		t.Helper()
		cur, err := v1beta1.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, "the agent reads its addon at v1beta1")
		st := cur.Status.DeepCopy()
		change(st)
		body, err := json.Marshal(map[string]any{"status": map[string]any{
			"registrations": st.Registrations, "conditions": st.Conditions, "configReferences": st.ConfigReferences}})
		require.NoError(t, err)
		_, err = v1beta1.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
		return err
	}

	// What upstream's agent writes: admitted.
	require.NoError(t, patch(func(st *addonv1beta1.ManagedClusterAddOnStatus) {
		for i := range st.Registrations {
			if r := &st.Registrations[i]; r.Type == addonv1beta1.KubeClient {
				r.KubeClient.Driver = "csr"
			}
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: addonv1beta1.ManagedClusterAddOnConditionAvailable,
			Status: metav1.ConditionUnknown, Reason: "ManagedClusterAddOnLeaseNotFound", Message: "The status of upstream-driver add-on is unknown."})
	}), "an agent sets its kubeClient driver and reports conditions, as upstream's registration agent does")
	stored, err := admin.AddonV1alpha1().ManagedClusterAddOns(cluster).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "csr", stored.Status.KubeClientDriver, "the driver is stored (status.kubeClientDriver at v1alpha1)")
	assert.Equal(t, []addonv1alpha1.RegistrationConfig{kube, custom}, stored.Status.Registrations, "the hub's registrations stand")
	assert.True(t, meta.IsStatusConditionPresentAndEqual(stored.Status.Conditions, addonv1beta1.ManagedClusterAddOnConditionAvailable, metav1.ConditionUnknown))

	// The driver again, the other value the CRD allows: admitted (it is the agent's to declare).
	require.NoError(t, patch(func(st *addonv1beta1.ManagedClusterAddOnStatus) { st.Registrations[0].KubeClient.Driver = "token" }))

	refused := func(why string, change func(*addonv1beta1.ManagedClusterAddOnStatus), field string) {
		t.Helper()
		err := patch(change)
		require.Error(t, err, "an agent could %s", why)
		assert.True(t, apierrors.IsInvalid(err) || apierrors.IsForbidden(err), "%s: %v", why, err)
		assert.Contains(t, err.Error(), field, why)
	}
	refused("rename the kubeClient subject", func(st *addonv1beta1.ManagedClusterAddOnStatus) {
		st.Registrations[0].KubeClient.Subject.User = "admin"
	}, "status.registrations")
	refused("add a group to the kubeClient subject", func(st *addonv1beta1.ManagedClusterAddOnStatus) {
		st.Registrations[0].KubeClient.Subject.Groups = append(st.Registrations[0].KubeClient.Subject.Groups, "system:masters")
	}, "status.registrations")
	refused("turn a kubeClient registration into a custom signer's", func(st *addonv1beta1.ManagedClusterAddOnStatus) {
		st.Registrations[0] = addonv1beta1.RegistrationConfig{Type: addonv1beta1.CustomSigner, CustomSigner: &addonv1beta1.CustomSignerConfig{
			SignerName: customSigner, Subject: addonv1beta1.Subject{BaseSubject: st.Registrations[0].KubeClient.Subject.BaseSubject}}}
	}, "status.registrations")
	refused("change a custom signer", func(st *addonv1beta1.ManagedClusterAddOnStatus) {
		st.Registrations[1].CustomSigner.SignerName = "example.com/other"
	}, "status.registrations")
	refused("change a custom signer's subject", func(st *addonv1beta1.ManagedClusterAddOnStatus) {
		st.Registrations[1].CustomSigner.Subject.OrganizationUnits = []string{"ops"}
	}, "status.registrations")
	refused("add a registration", func(st *addonv1beta1.ManagedClusterAddOnStatus) {
		st.Registrations = append(st.Registrations, addonv1beta1.RegistrationConfig{Type: addonv1beta1.CustomSigner,
			CustomSigner: &addonv1beta1.CustomSignerConfig{SignerName: "example.com/mine", Subject: addonv1beta1.Subject{BaseSubject: addonv1beta1.BaseSubject{User: "me"}}}})
	}, "status.registrations")
	refused("drop a registration", func(st *addonv1beta1.ManagedClusterAddOnStatus) { st.Registrations = st.Registrations[:1] }, "status.registrations")
	refused("name a config", func(st *addonv1beta1.ManagedClusterAddOnStatus) {
		st.ConfigReferences = []addonv1beta1.ConfigReference{{ConfigGroupResource: addonv1beta1.ConfigGroupResource{
			Group: ocm.AddonGroup, Resource: "addontemplates"}, DesiredConfig: &addonv1beta1.ConfigSpecHash{
			ConfigReferent: addonv1beta1.ConfigReferent{Name: "someone-elses"}, SpecHash: "x"}}}
	}, "status.configReferences")

	// At v1alpha1 too: the driver has its own field there; the subject is the hub's.
	v1alpha1 := agent.AddonV1alpha1().ManagedClusterAddOns(cluster)
	cur, err := v1alpha1.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	cur.Status.KubeClientDriver = "csr"
	cur, err = v1alpha1.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	require.NoError(t, err, "an agent sets status.kubeClientDriver at v1alpha1")
	cur.Status.Registrations[0].Subject.Groups = []string{"system:masters"}
	_, err = v1alpha1.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	require.Error(t, err, "an agent changed a subject at v1alpha1")
	assert.Contains(t, err.Error(), "status.registrations")

	stored, err = admin.AddonV1alpha1().ManagedClusterAddOns(cluster).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []addonv1alpha1.RegistrationConfig{kube, custom}, stored.Status.Registrations, "the hub's registrations stand")
	assert.Empty(t, stored.Status.ConfigReferences)
}
