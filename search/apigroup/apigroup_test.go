package apigroup_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	searchv1alpha1 "flotilla.dev/flotilla/api/search/v1alpha1"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/search/apigroup"
	"flotilla.dev/flotilla/search/index"
	"flotilla.dev/flotilla/search/object"
	"flotilla.dev/flotilla/search/searchapi"
)

var (
	podsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

func raw(t testing.TB, format string, a ...any) json.RawMessage {
	t.Helper()
	s := fmt.Sprintf(format, a...)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m), s)
	return json.RawMessage(s)
}

func pod(t testing.TB, cluster, name, image, phase, reason string) json.RawMessage {
	state := `{"running":{}}`
	if reason != "" {
		state = fmt.Sprintf(`{"waiting":{"reason":%q}}`, reason)
	}
	return raw(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"shop","name":%q,"uid":"%s-%s","resourceVersion":"1","labels":{"app":"web"},"creationTimestamp":"2026-11-01T00:00:00Z"},
		"spec":{"containers":[{"name":"c","image":%q}]},"status":{"phase":%q,"containerStatuses":[{"name":"c","ready":true,"restartCount":2,"state":%s}]}}`,
		name, cluster, name, image, phase, state)
}

var syncOnce sync.Once

// synced has each cluster's agent post its objects once.
func synced(t *testing.T) {
	syncOnce.Do(func() {
		ctx := context.Background()
		for cluster, objs := range map[string][]json.RawMessage{
			"east": {pod(t, "east", "web-1", "nginx:1.25", "Running", ""), pod(t, "east", "crash-1", "nginx:1.25", "Running", "CrashLoopBackOff")},
			"west": {pod(t, "west", "web-1", "nginx:1.24", "Running", "")},
		} {
			c, err := searchapi.NewClient(agentConfig(t, cluster))
			require.NoError(t, err)
			res, err := c.Sync(ctx, cluster, &searchv1alpha1.Sync{Resources: []searchv1alpha1.ResourceSync{
				{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true, Mode: searchv1alpha1.ModeReplace, Upserts: objs},
				{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true, Mode: searchv1alpha1.ModeReplace, Upserts: []json.RawMessage{
					raw(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"namespace":"shop","name":"pay","uid":"%s-pay","resourceVersion":"3"},"spec":{"replicas":3},"status":{"readyReplicas":%d}}`,
						cluster, map[string]int{"east": 2, "west": 3}[cluster])}},
			}})
			require.NoError(t, err)
			assert.Equal(t, len(objs), res.Resources[0].Stored)
			assert.Equal(t, 1, res.Resources[1].Stored)
		}
	})
}

// An agent that restarts checks its digests: in sync, nothing to send;
// otherwise the hub says what it holds.
func TestAgentCheck(t *testing.T) {
	synced(t)
	ctx := context.Background()
	c, err := searchapi.NewClient(agentConfig(t, "east"))
	require.NoError(t, err)
	same := object.Digest(map[string]string{"east-web-1": "1", "east-crash-1": "1"})
	res, err := c.Sync(ctx, "east", &searchv1alpha1.Sync{Resources: []searchv1alpha1.ResourceSync{
		{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true, Mode: searchv1alpha1.ModeCheck, Digest: same},
		{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true, Mode: searchv1alpha1.ModeCheck, Digest: object.Digest(nil)},
	}})
	require.NoError(t, err)
	assert.True(t, res.Resources[0].InSync)
	assert.Nil(t, res.Resources[0].Have)
	assert.False(t, res.Resources[1].InSync)
	assert.Equal(t, map[string]string{"east-pay": "3"}, res.Resources[1].Have)
}

// Only a cluster's own search agent writes its objects: another cluster's
// agent is refused by the hub apiserver (RBAC), a user who holds the RBAC
// but is no agent by the search API; what is refused writes nothing.
func TestForgedWritesAreRefused(t *testing.T) {
	synced(t)
	ctx := context.Background()
	forged := &searchv1alpha1.Sync{Resources: []searchv1alpha1.ResourceSync{{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true,
		Mode: searchv1alpha1.ModeDelta, Upserts: []json.RawMessage{pod(t, "east", "planted", "evil:1", "Running", "")}}}}
	west, err := searchapi.NewClient(agentConfig(t, "west"))
	require.NoError(t, err)
	_, err = west.Sync(ctx, "east", forged)
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "west's agent writing east: %v", err)

	dave, err := searchapi.NewClient(userConfig(t, "dave"))
	require.NoError(t, err)
	_, err = dave.Sync(ctx, "east", forged)
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "dave: %v", err)
	assert.Contains(t, err.Error(), "only a cluster's own search agent writes its objects")

	bob, err := searchapi.NewClient(userConfig(t, "bob"))
	require.NoError(t, err)
	_, err = bob.Sync(ctx, "east", forged)
	assert.True(t, apierrors.IsForbidden(err), "bob: %v", err)

	v, err := store.Versions(ctx, "east", podsGVR.GroupResource())
	require.NoError(t, err)
	assert.NotContains(t, v, "east-planted")
}

// A malformed Sync is a 400 naming what is wrong, and writes nothing.
func TestBadSyncs(t *testing.T) {
	synced(t)
	ctx := context.Background()
	east, err := searchapi.NewClient(agentConfig(t, "east"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		rs   searchv1alpha1.ResourceSync
		want string
	}{
		{"no mode", searchv1alpha1.ResourceSync{Version: "v1", Resource: "pods", Kind: "Pod"}, `mode "" is not Check, Delta or Replace`},
		{"a check with objects", searchv1alpha1.ResourceSync{Version: "v1", Resource: "pods", Kind: "Pod", Mode: searchv1alpha1.ModeCheck, Digest: object.Digest(nil),
			Deletes: []string{"x"}}, "a Check carries a digest"},
		{"another kind", searchv1alpha1.ResourceSync{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true, Mode: searchv1alpha1.ModeDelta,
			Upserts: []json.RawMessage{raw(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"a","name":"c","uid":"u"}}`)}}, "not v1 Pod"},
		{"a namespaced object without namespace", searchv1alpha1.ResourceSync{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true, Mode: searchv1alpha1.ModeDelta,
			Upserts: []json.RawMessage{raw(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"c","uid":"u"}}`)}}, "have a namespace"},
		{"not JSON", searchv1alpha1.ResourceSync{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true, Mode: searchv1alpha1.ModeDelta,
			Upserts: []json.RawMessage{json.RawMessage(`"a string"`)}}, "upserts[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := east.Sync(ctx, "east", &searchv1alpha1.Sync{Resources: []searchv1alpha1.ResourceSync{tc.rs}})
			require.Error(t, err)
			assert.True(t, apierrors.IsBadRequest(err), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	v, err := store.Versions(ctx, "east", podsGVR.GroupResource())
	require.NoError(t, err)
	assert.Len(t, v, 2)
}

func hits(l *unstructured.UnstructuredList) []string {
	var out []string
	for _, u := range l.Items {
		out = append(out, u.GetAnnotations()[apigroup.ClusterLabel]+"/"+u.GetName())
	}
	sort.Strings(out)
	return out
}

// A user finds the objects of the clusters whose ManagedCluster they may
// get: carol every cluster's, alice east's, bob nothing.
func TestSearchAsUsers(t *testing.T) {
	synced(t)
	ctx := context.Background()
	for user, want := range map[string][]string{
		"carol": {"east/crash-1", "east/web-1", "west/web-1"},
		"alice": {"east/crash-1", "east/web-1"},
		"bob":   nil,
	} {
		t.Run(user, func(t *testing.T) {
			c, err := searchapi.NewClient(userConfig(t, user))
			require.NoError(t, err)
			l, err := c.List(ctx, podsGVR, "", nil)
			require.NoError(t, err)
			assert.Equal(t, want, hits(l))
			assert.Equal(t, "PodList", l.GetKind())
			// Naming a cluster one may not see finds nothing there either.
			l, err = c.List(ctx, podsGVR, "", url.Values{"cluster": {"west"}})
			require.NoError(t, err)
			if user == "carol" {
				assert.Equal(t, []string{"west/web-1"}, hits(l))
			} else {
				assert.Empty(t, hits(l))
			}
		})
	}
}

func TestFilters(t *testing.T) {
	synced(t)
	ctx := context.Background()
	c, err := searchapi.NewClient(userConfig(t, "carol"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		gvr  schema.GroupVersionResource
		ns   string
		q    url.Values
		want []string
	}{
		{"cluster selector", podsGVR, "", url.Values{"clusterSelector": {"env=prod"}}, []string{"east/crash-1", "east/web-1"}},
		{"image", podsGVR, "", url.Values{"image": {"nginx:1.24"}}, []string{"west/web-1"}},
		{"image as a field", podsGVR, "", url.Values{"fieldSelector": {"image=nginx:1.25"}}, []string{"east/crash-1", "east/web-1"}},
		{"reason", podsGVR, "", url.Values{"fieldSelector": {"status.reason=CrashLoopBackOff"}}, []string{"east/crash-1"}},
		{"the cluster pseudo-label", podsGVR, "", url.Values{"labelSelector": {apigroup.ClusterLabel + "=west,app=web"}}, []string{"west/web-1"}},
		{"a namespace", podsGVR, "shop", nil, []string{"east/crash-1", "east/web-1", "west/web-1"}},
		{"another namespace", podsGVR, "other", nil, nil},
		{"not ready deployments", deploymentsGVR, "", url.Values{"ready": {"false"}}, []string{"east/pay"}},
		{"a name prefix", podsGVR, "", url.Values{"namePrefix": {"cra"}}, []string{"east/crash-1"}},
		{"client-go's request timeout is accepted", podsGVR, "", url.Values{"timeout": {"30s"}, "namePrefix": {"cra"}}, []string{"east/crash-1"}},
		{"two names in a field selector both hold", podsGVR, "", url.Values{"fieldSelector": {"metadata.name=web-1,metadata.name=crash-1"}}, nil},
		{"one name twice", podsGVR, "", url.Values{"fieldSelector": {"metadata.name=web-1,metadata.name=web-1"}}, []string{"east/web-1", "west/web-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := c.List(ctx, tc.gvr, tc.ns, tc.q)
			require.NoError(t, err)
			assert.Equal(t, tc.want, hits(l))
		})
	}
	for q, want := range map[string]string{
		"fieldSelector=spec.nodeName%3Dn1": `field "spec.nodeName" is not searched`,
		"labelSelector=n%3E1":              "operator gt is not supported",
		"limit=x":                          `limit "x"`,
		"watch=true":                       "watch is not supported",
		"colour=blue":                      `parameter "colour" is not known`,
		"continue=garbage":                 "is not a token this server gave",
	} {
		v, _ := url.ParseQuery(q)
		_, err := c.List(ctx, podsGVR, "", v)
		require.Error(t, err, q)
		assert.True(t, apierrors.IsBadRequest(err), "%s: %v", q, err)
		assert.Contains(t, err.Error(), want, q)
	}
}

// prefixConfig is cfg pointed at the search's Kubernetes API, as a
// kubeconfig context for kubectl would be.
func prefixConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Host += searchapi.ResourcesPath
	return c
}

// client-go (what kubectl is built on) discovers the synced resources and
// lists them across clusters, pages included, and asks for a Table as
// kubectl get does.
func TestKubernetesClients(t *testing.T) {
	synced(t)
	ctx := context.Background()
	cfg := prefixConfig(userConfig(t, "carol"))
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	_, lists, err := dc.ServerGroupsAndResources()
	require.NoError(t, err)
	var found []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			found = append(found, l.GroupVersion+"/"+r.Name)
		}
	}
	assert.ElementsMatch(t, []string{"v1/pods", "apps/v1/deployments"}, found)

	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	l, err := dyn.Resource(podsGVR).List(ctx, metav1.ListOptions{LabelSelector: "app=web", Limit: 2})
	require.NoError(t, err)
	require.Len(t, l.Items, 2)
	require.NotEmpty(t, l.GetContinue())
	rest2, err := dyn.Resource(podsGVR).List(ctx, metav1.ListOptions{LabelSelector: "app=web", Limit: 2, Continue: l.GetContinue()})
	require.NoError(t, err)
	assert.Equal(t, []string{"west/web-1"}, hits(rest2))

	one, err := dyn.Resource(deploymentsGVR).Namespace("shop").Get(ctx, "pay", metav1.GetOptions{})
	require.Error(t, err, "pay is in two clusters")
	assert.Contains(t, err.Error(), "is in 2 clusters (east, west)")
	alice, err := dynamic.NewForConfig(prefixConfig(userConfig(t, "alice")))
	require.NoError(t, err)
	one, err = alice.Resource(deploymentsGVR).Namespace("shop").Get(ctx, "pay", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "east", one.GetAnnotations()[apigroup.ClusterLabel])

	// kubectl get's Table.
	kc, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	body, err := kc.CoreV1().RESTClient().Get().AbsPath("/api/v1/pods").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json").DoRaw(ctx)
	require.NoError(t, err)
	var tbl metav1.Table
	require.NoError(t, json.Unmarshal(body, &tbl))
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	assert.Equal(t, []string{"Cluster", "Name", "Ready", "Status", "Restarts", "Node", "Age"}, cols)
	require.Len(t, tbl.Rows, 3)
	assert.Equal(t, []any{"east", "crash-1", "1/1", "CrashLoopBackOff", float64(2), ""}, tbl.Rows[0].Cells[:6])
	var meta metav1.PartialObjectMetadata
	require.NoError(t, json.Unmarshal(tbl.Rows[0].Object.Raw, &meta))
	assert.Equal(t, "shop", meta.Namespace, "kubectl -A prints NAMESPACE from the row's metadata")

	// Unknown resources are 404, as kubectl expects.
	_, err = dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

// Syncs are written, never read: what an agent sent is read back only
// through searches, as the reader's rights allow.
func TestSyncsAreNotRead(t *testing.T) {
	kc, err := kubernetes.NewForConfig(userConfig(t, "carol"))
	require.NoError(t, err)
	err = kc.Discovery().RESTClient().Get().AbsPath(searchapi.SyncsPath("east")).Do(context.Background()).Error()
	require.Error(t, err)
	assert.True(t, apierrors.IsMethodNotSupported(err), "%v", err)
}

// A get by name with a limit of 1 still says the name is in several
// clusters: a short page is not an answer.
func TestGetByNameWithALimitIsNotAmbiguous(t *testing.T) {
	synced(t)
	kc, err := kubernetes.NewForConfig(prefixConfig(userConfig(t, "carol")))
	require.NoError(t, err)
	err = kc.AppsV1().RESTClient().Get().AbsPath("/apis/apps/v1/namespaces/shop/deployments/pay").Param("limit", "1").Do(context.Background()).Error()
	require.Error(t, err, "pay is in two clusters")
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	assert.Contains(t, err.Error(), "is in more than 1 clusters (east)")
}

// Discovery shows the resources of the clusters the user may see: bob,
// who may see none, is shown none (the kinds a cluster syncs, its CRDs
// among them, are its own).
func TestDiscoveryShowsOnlyVisibleClusters(t *testing.T) {
	synced(t)
	dc, err := discovery.NewDiscoveryClientForConfig(prefixConfig(userConfig(t, "bob")))
	require.NoError(t, err)
	_, lists, err := dc.ServerGroupsAndResources()
	require.NoError(t, err)
	var found []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			found = append(found, l.GroupVersion+"/"+r.Name)
		}
	}
	assert.Empty(t, found)
}

// A cluster whose search addon is not there (never enabled, or removed:
// the cleanup has emptied its index) writes nothing, even with the
// agent's credential and right still at hand.
func TestClustersThatDoNotSyncWriteNothing(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(hubConfig, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "north"}}))
	require.NoError(t, c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "north"}}))
	require.NoError(t, c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "north", Name: "search-agent"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "search-agent-north"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: ocm.AddonClusterGroup("north", ocm.SearchAddon)}}}))
	require.NoError(t, c.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "search-agent-north"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{apigroup.Group}, Resources: []string{apigroup.Syncs}, Verbs: []string{"create"}}}}))
	agent, err := searchapi.NewClient(agentConfig(t, "north"))
	require.NoError(t, err)
	post := func() error {
		_, err := agent.Sync(ctx, "north", &searchv1alpha1.Sync{Resources: []searchv1alpha1.ResourceSync{
			{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true, Mode: searchv1alpha1.ModeReplace, Upserts: []json.RawMessage{pod(t, "north", "web-1", "nginx", "Running", "")}}}})
		return err
	}
	held := func() bool {
		clusters, err := store.Clusters(ctx)
		require.NoError(t, err)
		return slices.Contains(clusters, "north")
	}
	err = post()
	assert.True(t, apierrors.IsForbidden(err), "no addon: %v", err)
	assert.False(t, held())

	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "north", Name: ocm.SearchAddon}}
	require.NoError(t, c.Create(ctx, mca))
	require.NoError(t, post())
	assert.True(t, held())

	require.NoError(t, c.Delete(ctx, mca))
	require.NoError(t, store.DeleteCluster(ctx, "north"), "as the cleanup does")
	err = post()
	assert.True(t, apierrors.IsForbidden(err), "addon removed: %v", err)
	assert.False(t, held(), "a removed cluster stays removed")
}

// A cluster past the hub's per-cluster limit is refused as an exceeded
// quota is (403, saying which limit), and what it sent is not stored.
func TestClusterLimit(t *testing.T) {
	synced(t)
	ctx := context.Background()
	u, err := store.Usage(ctx, "east")
	require.NoError(t, err)
	store.SetLimits(index.Limits{Objects: u.Objects})
	t.Cleanup(func() { store.SetLimits(index.Limits{}) })
	east, err := searchapi.NewClient(agentConfig(t, "east"))
	require.NoError(t, err)
	_, err = east.Sync(ctx, "east", &searchv1alpha1.Sync{Resources: []searchv1alpha1.ResourceSync{{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true,
		Mode: searchv1alpha1.ModeDelta, Upserts: []json.RawMessage{pod(t, "east", "one-too-many", "nginx:1.25", "Running", "")}}}})
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), "--search-max-objects-per-cluster")
	v, err := store.Versions(ctx, "east", podsGVR.GroupResource())
	require.NoError(t, err)
	assert.NotContains(t, v, "east-one-too-many")
}
