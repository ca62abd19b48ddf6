package search_test

import (
	"context"
	"net/url"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/addons/ops"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/search/apigroup"
	"flotilla.dev/flotilla/search/searchapi"
)

var (
	pods        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

func hits(l *unstructured.UnstructuredList) []string {
	var out []string
	for _, u := range l.Items {
		out = append(out, u.GetAnnotations()[apigroup.ClusterLabel]+"/"+u.GetNamespace()+"/"+u.GetName())
	}
	sort.Strings(out)
	return out
}

// user is a ServiceAccount of the hub in namespace users that may get the
// ManagedClusters named (none: no right at all).
func user(t *testing.T, name string, clusters ...string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(f.Hub.Config)
	_, _ = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "users"}}, metav1.CreateOptions{})
	_, err := cs.CoreV1().ServiceAccounts("users").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	if len(clusters) > 0 {
		_, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "search-test-" + name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{clusterv1.GroupName}, Resources: []string{"managedclusters"}, ResourceNames: clusters, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "search-test-" + name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "search-test-" + name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "users", Name: name}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("users").CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.AnonymousClientConfig(f.Hub.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg
}

// The demo's question, answered on real clusters: which clusters run
// nginx:1.25, which Deployments are short of replicas; as the hub's admin,
// a user who may see cluster1 only, and a user with no rights. Then the
// addon is disabled on cluster2 and its objects leave the index.
func TestSearchTheFleet(t *testing.T) {
	ctx := context.Background()
	for i, image := range []string{"nginx:1.25", "nginx:1.24"} {
		cs := kubernetes.NewForConfigOrDie(f.Clusters[i].Config)
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.AppsV1().Deployments("shop").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}}}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.CoreV1().Pods("shop").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "solo", Labels: map[string]string{"app": "solo"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "solo", Image: "busybox:" + image[len("nginx:"):]}}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.CoreV1().Secrets("shop").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	admin, err := searchapi.NewClient(f.Hub.Config)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		l, err := admin.List(ctx, pods, "", url.Values{"image": {"busybox:1.25"}})
		if assert.NoError(c, err) {
			assert.Equal(c, []string{"cluster1/shop/solo"}, hits(l))
		}
		l, err = admin.List(ctx, pods, "", url.Values{"image": {"nginx:1.25"}, "labelSelector": {"app=web"}})
		if assert.NoError(c, err) {
			assert.Len(c, l.Items, 2, "the Deployment's two Pods on cluster1")
		}
		l, err = admin.List(ctx, deployments, "shop", url.Values{"ready": {"false"}})
		if assert.NoError(c, err) {
			assert.Equal(c, []string{"cluster1/shop/web", "cluster2/shop/web"}, hits(l), "no node runs them: 0 of 2 ready")
		}
	}, timeout, tick)

	// Secrets: found, without their data. Each kind is indexed on its own
	// watch, so the Secrets may arrive after the Pods did.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		l, err := admin.List(ctx, schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "shop", url.Values{"fieldSelector": {"metadata.name=db"}})
		if !assert.NoError(c, err) || !assert.Len(c, l.Items, 2) {
			return
		}
		for _, s := range l.Items {
			assert.NotContains(c, s.Object, "data")
			assert.NotContains(c, s.Object, "stringData")
		}
	}, timeout, tick)

	// kubectl's way: a kubeconfig whose server is the search's prefix. The
	// apiserver's authorizer learns of alice's new binding from its own
	// watch, so her view is waited for; what she must never see is asserted
	// on every try.
	prefix := rest.CopyConfig(user(t, "alice", "cluster1"))
	prefix.Host += searchapi.ResourcesPath
	dyn, err := dynamic.NewForConfig(prefix)
	require.NoError(t, err)
	sawCluster2 := false // on any try (the condition runs off the test's goroutine)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pl, err := dyn.Resource(pods).List(ctx, metav1.ListOptions{LabelSelector: "app=solo"})
		if assert.NoError(c, err) {
			sawCluster2 = sawCluster2 || slices.Contains(hits(pl), "cluster2/shop/solo")
			assert.Equal(c, []string{"cluster1/shop/solo"}, hits(pl), "alice sees cluster1 only")
		}
	}, timeout, tick)
	assert.False(t, sawCluster2, "alice may not see cluster2")

	nobody, err := searchapi.NewClient(user(t, "bob"))
	require.NoError(t, err)
	l, err := nobody.List(ctx, pods, "", nil)
	require.NoError(t, err)
	assert.Empty(t, l.Items, "bob may get no ManagedCluster: he sees nothing")

	// A change on a cluster shows.
	cs2 := kubernetes.NewForConfigOrDie(f.Clusters[1].Config)
	require.NoError(t, cs2.CoreV1().Pods("shop").Delete(ctx, "solo", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		l, err := admin.List(ctx, pods, "shop", url.Values{"labelSelector": {"app=solo"}})
		if assert.NoError(c, err) {
			assert.Equal(c, []string{"cluster1/shop/solo"}, hits(l))
		}
	}, timeout, tick)

	// Disabling the addon on cluster2 takes its objects out of the index.
	_, err = ops.Disable(ctx, f.Client, ops.DisableOptions{Names: []string{ocm.SearchAddon}, Clusters: []string{"cluster2"}})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		l, err := admin.List(ctx, deployments, "shop", nil)
		if assert.NoError(c, err) {
			assert.Equal(c, []string{"cluster1/shop/web"}, hits(l))
		}
	}, timeout, tick)
}
