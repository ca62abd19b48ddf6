package registration_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/klusterlet/registration"
)

// TestAutoApproveHoldsALiveCluster: with the whole hub running, an
// auto-approve user's first CSR for a joined cluster whose agent renews its
// lease is held (pending, neither approved nor denied, an event says why):
// the auto-approver cannot impersonate a live cluster. Once the agent stops
// (it lost its credential) and the lease goes stale, the same CSR is approved
// without an admin.
func TestAutoApproveHoldsALiveCluster(t *testing.T) {
	ctx := context.Background()
	const name = "live-auto"
	a := newAgent(t, env.Clusters[1], name, "agent-live-auto").start()
	acceptClusters(t, name)
	waitCondition(t, name, clusterv1.ManagedClusterConditionJoined, metav1.ConditionTrue)
	waitCondition(t, name, clusterv1.ManagedClusterConditionAvailable, metav1.ConditionTrue)

	grantBootstrap(t, autoJoiner)
	impostor := autoJoinerCSR(t, name, "a2")
	heldEvent(t, impostor, "auto-approve gives no certificate for a live cluster")
	got, err := kube(env.Hub.Config).CertificatesV1().CertificateSigningRequests().Get(ctx, impostor, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, got.Status.Conditions, "held: neither approved nor denied")
	assert.Empty(t, got.Status.Certificate)

	// The agent goes silent: its lease becomes stale and the CSR is approved.
	a.stop()
	waitCondition(t, name, clusterv1.ManagedClusterConditionAvailable, metav1.ConditionUnknown, "ManagedClusterLeaseUpdateStopped")
	require.Eventually(t, func() bool {
		got, err := kube(env.Hub.Config).CertificatesV1().CertificateSigningRequests().Get(ctx, impostor, metav1.GetOptions{})
		require.NoError(t, err)
		return approved(got)
	}, timeout, tick, "a cluster whose lease is stale comes back without an admin")
}

// autoJoinerCSR files a first CSR for cluster as the hub's auto-approve user
// and returns its name.
func autoJoinerCSR(t *testing.T, cluster, agentName string) string {
	t.Helper()
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: autoJoiner}
	req, err := registration.BuildCSR(cluster, agentName, newKeyPEM(t), 0)
	require.NoError(t, err)
	created, err := kube(cfg).CertificatesV1().CertificateSigningRequests().Create(context.Background(), req, metav1.CreateOptions{})
	require.NoError(t, err)
	return created.Name
}

// heldEvent waits for the hub's event saying why it holds CSR name for an
// admin; the event names why and `flotilla accept --force`.
func heldEvent(t *testing.T, name, why string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		evs, err := kube(env.Hub.Config).EventsV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{FieldSelector: "regarding.name=" + name})
		require.NoError(c, err)
		found := false
		for _, ev := range evs.Items {
			if ev.Reason == "AutoApproveHeld" && strings.Contains(ev.Note, why) && strings.Contains(ev.Note, "--force") {
				found = true
			}
		}
		assert.True(c, found, "an AutoApproveHeld event on CSR %s saying %q", name, why)
	}, timeout, tick)
}
