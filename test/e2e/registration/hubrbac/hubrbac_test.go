// Package hubrbac_test runs the hub and the registration agent as the identities
// manifests/hub and manifests/klusterlet give them (not as admins) and checks that
// registration works end to end with exactly those permissions.
package hubrbac_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/hub/deploy"
	"flotilla.dev/flotilla/hub/registration/accept"
	"flotilla.dev/flotilla/hub/registration/bootstrap"
	"flotilla.dev/flotilla/hub/registration/rbac"
	"flotilla.dev/flotilla/klusterlet"
	"flotilla.dev/flotilla/klusterlet/join"
	"flotilla.dev/flotilla/klusterlet/registration"
	"flotilla.dev/flotilla/manifests"
	"flotilla.dev/flotilla/test/testenv"
)

func TestRunsWithShippedRBAC(t *testing.T) {
	ctrl.SetLogger(klog.Background())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testenv.Start(t, testenv.Options{Clusters: 1})
	tok, err := bootstrap.Init(ctx, bootstrap.Options{Config: env.Hub.Config})
	require.NoError(t, err)

	// The hub's RBAC from manifests/hub (everything but the Deployment).
	objs, err := deploy.Render(deploy.Options{Image: "flotilla.local/unused:1"})
	require.NoError(t, err)
	admin, err := client.New(env.Hub.Config, client.Options{})
	require.NoError(t, err)
	for _, obj := range objs {
		if obj.GetKind() == "Deployment" {
			continue
		}
		if obj.GetKind() == "ClusterRole" || obj.GetKind() == "Role" {
			rules, _, err := unstructured.NestedSlice(obj.Object, "rules")
			require.NoError(t, err)
			for _, r := range rules {
				verbs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs")
				assert.NotContains(t, verbs, "escalate", "the hub holds what it grants: no escalate")
				if slices.Contains(verbs, "bind") {
					names, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resourceNames")
					assert.Equal(t, []string{rbac.HubClusterLeasesRole}, names,
						"the hub holds what it grants: bind on its own cluster-namespace lease role only")
				}
			}
		}
		require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
	}
	hubIdentity := rest.CopyConfig(env.Hub.Config)
	hubIdentity.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:open-cluster-management-hub:flotilla-hub",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:open-cluster-management-hub", "system:authenticated"},
	}
	// The admin cannot be the one doing the hub's work by accident.
	_, err = kubernetes.NewForConfigOrDie(hubIdentity).CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	require.Error(t, err, "the hub identity must not read secrets")

	ready := make(chan struct{})
	hubErr := make(chan error, 1)
	go func() { hubErr <- hub.Run(ctx, hub.Options{Config: hubIdentity, Ready: func() { close(ready) }}) }()
	select {
	case <-ready:
	case err := <-hubErr:
		t.Fatalf("hub: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("hub did not become ready")
	}

	// The hub pointed the addon CRDs at its conversion webhook with these rights
	// alone: a v1beta1 client lists ManagedClusterAddOns.
	_, err = addonclient.NewForConfigOrDie(env.Hub.Config).AddonV1beta1().ManagedClusterAddOns("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "v1beta1 list through the hub's conversion webhook")

	spoke := env.Clusters[0]
	require.NoError(t, join.Join(ctx, join.Options{SpokeConfig: spoke.Config, HubAPIServer: env.Hub.URL, HubToken: tok.Token,
		ClusterName: "rbac-check", NoDeployment: true}))
	// The agent runs as the klusterlet ServiceAccount with manifests/klusterlet RBAC.
	kobjs, err := manifests.Render(manifests.KlusterletManifests, map[string]string{
		"Namespace": registration.DefaultAgentNamespace, "ClusterName": "rbac-check", "Image": "unused"})
	require.NoError(t, err)
	spokeAdmin, err := client.New(spoke.Config, client.Options{})
	require.NoError(t, err)
	for _, obj := range kobjs {
		if obj.GetKind() == "Deployment" || obj.GetKind() == "Namespace" || obj.GetName() == "open-cluster-management:klusterlet-work" {
			continue // no kubelet to run it; namespace made by join; work (cluster-admin) is off here
		}
		require.NoError(t, spokeAdmin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
	}
	agentIdentity := rest.CopyConfig(spoke.Config)
	agentIdentity.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + registration.DefaultAgentNamespace + ":klusterlet",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + registration.DefaultAgentNamespace, "system:authenticated"},
	}
	_, err = kubernetes.NewForConfigOrDie(agentIdentity).CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	require.Error(t, err, "the agent identity must not read secrets outside its namespace")

	agentCtx, stopAgent := context.WithCancel(ctx)
	agentDone := make(chan struct{})
	go func() {
		defer close(agentDone)
		_ = klusterlet.Run(agentCtx, klusterlet.Options{DisableWork: true, Registration: registration.Options{
			ClusterName: "rbac-check", SpokeConfig: agentIdentity, HubKubeconfigDir: t.TempDir(),
			LeaseDurationSeconds: 1, StatusSyncInterval: time.Second, RetryInterval: time.Second,
		}})
	}()
	require.NoError(t, accept.Accept(ctx, accept.Options{Config: env.Hub.Config, Clusters: []string{"rbac-check"}, Wait: true, Timeout: time.Minute}))

	clusters := clusterclient.NewForConfigOrDie(env.Hub.Config).ClusterV1().ManagedClusters()
	require.Eventually(t, func() bool {
		mc, err := clusters.Get(ctx, "rbac-check", metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) &&
			meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable) && len(mc.Spec.Taints) == 0
	}, time.Minute, 200*time.Millisecond, "joined and available, taints managed by the hub")

	// What the hub may do is what docs/deploy.md lists, no more, no less
	// (the cluster's namespace has the hub's lease binding by now).
	checkRights(ctx, t, env.Hub.Config, hubIdentity, "rbac-check")

	// Heartbeat loss and cleanup also work with the hub's own permissions.
	stopAgent()
	<-agentDone
	require.Eventually(t, func() bool {
		mc, err := clusters.Get(ctx, "rbac-check", metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionPresentAndEqual(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable, metav1.ConditionUnknown)
	}, time.Minute, 200*time.Millisecond)
	require.NoError(t, clusters.Delete(ctx, "rbac-check", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := clusters.Get(ctx, "rbac-check", metav1.GetOptions{})
		_, nsErr := kubernetes.NewForConfigOrDie(env.Hub.Config).RbacV1().ClusterRoles().Get(ctx, "open-cluster-management:managedcluster:rbac-check", metav1.GetOptions{})
		return err != nil && nsErr != nil
	}, time.Minute, 200*time.Millisecond, "deleted with its RBAC")
}
