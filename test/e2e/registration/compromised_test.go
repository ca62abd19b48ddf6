package registration_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/hub/registration/csr"
	"flotilla.dev/flotilla/internal/ocm"
)

// TestCompromisedClusterCredential: what the hub credential of an accepted
// cluster ("thief": the user and groups its certificate carries) can and
// cannot do to another accepted cluster ("victim") and to itself, on the
// running hub. The rows of docs/registration.md, "What a compromised managed
// cluster can and cannot do", that no other test proves.
func TestCompromisedClusterCredential(t *testing.T) {
	ctx := context.Background()
	const thief, victim = "thief", "victim"
	for _, name := range []string{thief, victim} {
		_, err := clusters(env.Hub.Config).ClusterV1().ManagedClusters().Create(ctx, &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}, metav1.CreateOptions{})
		require.NoError(t, err)
		waitCondition(t, name, clusterv1.ManagedClusterConditionHubAccepted, metav1.ConditionTrue)
	}
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: ocm.AgentUserName(thief, "agent1"),
		Groups: []string{ocm.ClusterGroupName(thief), ocm.ManagedClustersGroup, "system:authenticated"}}
	cs, cc, wc, ac := kube(cfg), clusters(cfg), workclient.NewForConfigOrDie(cfg), addonclient.NewForConfigOrDie(cfg)
	forbidden := func(what string, err error) {
		t.Helper()
		assert.True(t, apierrors.IsForbidden(err), "%s: want 403, got %v", what, err)
	}
	// Its own lease first: the hub's RBAC for it is in force.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := cs.CoordinationV1().Leases(thief).Get(ctx, "managed-cluster-lease", metav1.GetOptions{})
		assert.NoError(c, err)
	}, timeout, tick)

	t.Run("another cluster's lease cannot be renewed nor made stale", func(t *testing.T) {
		lease, err := kube(env.Hub.Config).CoordinationV1().Leases(victim).Get(ctx, "managed-cluster-lease", metav1.GetOptions{})
		require.NoError(t, err)
		stale := metav1.NewMicroTime(lease.Spec.RenewTime.Add(-24 * time.Hour))
		lease.Spec.RenewTime = &stale
		_, err = cs.CoordinationV1().Leases(victim).Update(ctx, lease, metav1.UpdateOptions{})
		forbidden("backdate the victim's lease (to have an auto-approver hand out its identity)", err)
		err = cs.CoordinationV1().Leases(victim).Delete(ctx, "managed-cluster-lease", metav1.DeleteOptions{})
		forbidden("delete the victim's lease", err)
	})

	t.Run("another cluster's addons are out of reach", func(t *testing.T) {
		mca, err := addonclient.NewForConfigOrDie(env.Hub.Config).AddonV1alpha1().ManagedClusterAddOns(victim).Create(ctx,
			&addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "victim-addon"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = ac.AddonV1alpha1().ManagedClusterAddOns(victim).Get(ctx, mca.Name, metav1.GetOptions{})
		forbidden("get the victim's addon", err)
		_, err = ac.AddonV1alpha1().ManagedClusterAddOns(victim).List(ctx, metav1.ListOptions{})
		forbidden("list the victim's addons", err)
		mca.Status.Registrations = []addonv1alpha1.RegistrationConfig{{SignerName: "kubernetes.io/kube-apiserver-client",
			Subject: addonv1alpha1.Subject{User: "system:admin", Groups: []string{"system:masters"}}}}
		_, err = ac.AddonV1alpha1().ManagedClusterAddOns(victim).UpdateStatus(ctx, mca, metav1.UpdateOptions{})
		forbidden("write the victim's addon status", err)
		_, err = ac.AddonV1alpha1().ManagedClusterAddOns(thief).Create(ctx,
			&addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "self-enabled"}}, metav1.CreateOptions{})
		forbidden("enable an addon on itself", err)
	})

	t.Run("no events in another cluster's namespace", func(t *testing.T) {
		_, err := cs.CoreV1().Events(victim).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "forged"},
			InvolvedObject: corev1.ObjectReference{Kind: "ManagedCluster", Name: victim}, Reason: "Forged", Message: "forged"}, metav1.CreateOptions{})
		forbidden("create an event in the victim's namespace", err)
	})

	t.Run("every CSR is readable (as upstream: public keys and certificates only)", func(t *testing.T) {
		_, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		assert.NoError(t, err)
	})

	t.Run("no new ManagedCluster, no deleting another", func(t *testing.T) {
		_, err := cc.ClusterV1().ManagedClusters().Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "thief-2"}}, metav1.CreateOptions{})
		forbidden("create another ManagedCluster", err)
		err = cc.ClusterV1().ManagedClusters().Delete(ctx, victim, metav1.DeleteOptions{})
		forbidden("delete the victim", err)
	})

	t.Run("its own ManagedCluster: only its client configs", func(t *testing.T) {
		for what, mutate := range map[string]func(*clusterv1.ManagedCluster){
			"mark itself accepted for a CSR (the auto-approver's annotation)": func(mc *clusterv1.ManagedCluster) {
				mc.Annotations = map[string]string{csr.AutoAcceptedAnnotation: "any"}
			},
			"drop its taints":          func(mc *clusterv1.ManagedCluster) { mc.Spec.Taints = nil },
			"stretch its lease":        func(mc *clusterv1.ManagedCluster) { mc.Spec.LeaseDurationSeconds = 86400 },
			"drop the hub's finalizer": func(mc *clusterv1.ManagedCluster) { mc.Finalizers = nil },
		} {
			err := updateCluster(cfg, thief, mutate)
			if assert.Error(t, err, what) {
				assert.Contains(t, err.Error(), "may change only spec.managedClusterClientConfigs", what)
			}
		}
	})

	t.Run("its own ManifestWorks: may edit them (OCM's model), not create nor delete them", func(t *testing.T) {
		cm := func(v string) workv1.Manifest {
			return workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w","namespace":"default"},"data":{"v":"` + v + `"}}`)}}
		}
		_, err := workclient.NewForConfigOrDie(env.Hub.Config).WorkV1().ManifestWorks(thief).Create(ctx, &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{cm("hub")}}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		w, err := wc.WorkV1().ManifestWorks(thief).Get(ctx, "w", metav1.GetOptions{})
		require.NoError(t, err)
		w.Spec.Workload.Manifests = []workv1.Manifest{cm("agent")}
		_, err = wc.WorkV1().ManifestWorks(thief).Update(ctx, w, metav1.UpdateOptions{})
		assert.NoError(t, err, "a cluster's agent may update its own works, as in OCM: what they deliver lands on that cluster alone")
		err = wc.WorkV1().ManifestWorks(thief).Delete(ctx, "w", metav1.DeleteOptions{})
		forbidden("delete its own work", err)
	})
}

// TestBootstrapIdentityCannotMarkItsOwnAcceptance: the annotation that marks
// the hub's own acceptance of a cluster for one CSR (auto-approve) may be set
// only by one who may accept, at create as at update; the bootstrap identity
// creating its ManagedCluster with it is refused, saying why, and without it
// is admitted.
func TestBootstrapIdentityCannotMarkItsOwnAcceptance(t *testing.T) {
	ctx := context.Background()
	boot := clusters(bootstrapConfig(t)).ClusterV1().ManagedClusters()
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c-marked",
		Annotations: map[string]string{csr.AutoAcceptedAnnotation: "some-uid"}}}
	_, err := boot.Create(ctx, mc, metav1.CreateOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || strings.Contains(err.Error(), "denied"), "%v", err)
	assert.Contains(t, err.Error(), "cannot set annotation "+csr.AutoAcceptedAnnotation)
	assert.Contains(t, err.Error(), "managedclusters/accept")

	mc.Annotations = nil
	_, err = boot.Create(ctx, mc, metav1.CreateOptions{})
	require.NoError(t, err, "the same ManagedCluster without the mark is admitted")
	t.Cleanup(func() {
		_ = clusters(env.Hub.Config).ClusterV1().ManagedClusters().Delete(context.Background(), "c-marked", metav1.DeleteOptions{})
	})
}
