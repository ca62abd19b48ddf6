//go:build nodes

package nodes_test

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/example"
	"flotilla.dev/flotilla/addons/governance"
	"flotilla.dev/flotilla/addons/search"
	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/addonagent"
	flotillaimage "flotilla.dev/flotilla/internal/image"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/search/searchapi"
)

// enableAddons runs `flotilla addon enable` for names on cluster1 and waits
// until each agent's Pod runs on cluster1's node from the local image and
// each ManagedClusterAddOn is Available from the Lease the Pod renews.
func enableAddons(t *testing.T, dataDir string, hubc client.Client, spoke kubernetes.Interface, names ...string) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	out, err := flotillaRun(t, "addon", "enable", "--names", strings.Join(names, ","), "--clusters", "cluster1",
		"--kubeconfig", filepath.Join(dataDir, "hub.kubeconfig"))
	require.NoError(t, err, out)
	for _, name := range names {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			pods, err := spoke.CoreV1().Pods(ocm.DefaultAddonInstallNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name + "-agent"})
			require.NoError(c, err)
			require.Len(c, pods.Items, 1)
			p := pods.Items[0]
			assert.Equal(c, corev1.PodRunning, p.Status.Phase, "%s agent Pod", name)
			assert.Equal(c, "cluster1-node", p.Spec.NodeName)
			assert.Equal(c, image, p.Spec.Containers[0].Image, "the hub's --addon-image: the locally imported tag")
			assert.Equal(c, corev1.PullIfNotPresent, p.Spec.Containers[0].ImagePullPolicy)
		}, timeout, tick)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var m addonv1alpha1.ManagedClusterAddOn
			require.NoError(c, hubc.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: name}, &m))
			cond := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
			require.NotNil(c, cond)
			assert.Equal(c, metav1.ConditionTrue, cond.Status, "%s Available: %s", name, cond.Message)
			assert.Equal(c, addonv1alpha1.AddonAvailableReasonLeaseLeaseUpdated, cond.Reason)
		}, timeout, tick)
	}
	t.Logf("addon enable %v -> agent Pods Running and Available in %s", names, time.Since(start).Round(100*time.Millisecond))
}

// disableAddons runs `flotilla addon disable` and waits until the agents'
// Pods, deploy works and hub credential Secrets are gone.
func disableAddons(t *testing.T, dataDir string, hubc client.Client, spoke kubernetes.Interface, names ...string) {
	t.Helper()
	ctx := context.Background()
	out, err := flotillaRun(t, "addon", "disable", "--names", strings.Join(names, ","), "--clusters", "cluster1",
		"--kubeconfig", filepath.Join(dataDir, "hub.kubeconfig"))
	require.NoError(t, err, out)
	for _, name := range names {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			pods, err := spoke.CoreV1().Pods(ocm.DefaultAddonInstallNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name + "-agent"})
			require.NoError(c, err)
			assert.Empty(c, pods.Items, "%s agent Pod gone", name)
			var works workv1.ManifestWorkList
			require.NoError(c, hubc.List(ctx, &works, client.InNamespace("cluster1")))
			for _, w := range works.Items {
				assert.False(c, strings.HasPrefix(w.Name, "addon-"+name+"-"), "work %s gone", w.Name)
			}
			_, err = spoke.CoreV1().Secrets(ocm.DefaultAddonInstallNamespace).Get(ctx, ocm.AddonHubKubeconfigSecret(name), metav1.GetOptions{})
			assert.True(c, apierrors.IsNotFound(err), "%s hub credential Secret gone: %v", name, err)
			err = hubc.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: name}, &addonv1alpha1.ManagedClusterAddOn{})
			assert.True(c, apierrors.IsNotFound(err), "ManagedClusterAddOn %s gone: %v", name, err)
		}, timeout, tick)
	}
}

func hubClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	return c
}

// testExampleAddonPod: enable -> the agent Pod (mounted hub credential,
// in-cluster config) runs, is Available and does its job with its hub
// credential (a labelled hub ConfigMap copied to the cluster) -> disable ->
// Pod, works and credential gone.
func testExampleAddonPod(t *testing.T, dataDir string, hub, spokeCfg *rest.Config) {
	ctx := context.Background()
	hubc := hubClient(t, hub)
	spoke := kubernetes.NewForConfigOrDie(spokeCfg)
	enableAddons(t, dataDir, hubc, spoke, example.Name)

	pods, err := spoke.CoreV1().Pods(ocm.DefaultAddonInstallNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=example-agent"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	mounted := false
	for _, v := range pods.Items[0].Spec.Volumes {
		mounted = mounted || (v.Secret != nil && v.Secret.SecretName == ocm.AddonHubKubeconfigSecret(example.Name))
	}
	assert.True(t, mounted, "the hub credential Secret is mounted into the agent Pod")
	// The Lease needs no hub credential: the Pod may be Available first.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		sec, err := spoke.CoreV1().Secrets(ocm.DefaultAddonInstallNamespace).Get(ctx, ocm.AddonHubKubeconfigSecret(example.Name), metav1.GetOptions{})
		require.NoError(c, err)
		assert.NotEmpty(c, sec.Data[addonagent.SecretKeyCert], "the klusterlet wrote the credential from the approved CSR")
	}, timeout, tick)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "from-hub-addon", Namespace: "cluster1", Labels: map[string]string{example.CopyLabel: "true"}},
		Data: map[string]string{"k": "v"}}
	require.NoError(t, hubc.Create(ctx, cm))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := spoke.CoreV1().ConfigMaps(ocm.DefaultAddonInstallNamespace).Get(ctx, cm.Name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, "v", got.Data["k"])
	}, timeout, tick, "the agent Pod copies with its own hub credential")
	require.NoError(t, hubc.Delete(ctx, cm))

	disableAddons(t, dataDir, hubc, spoke, example.Name)
}

// testGovernancePods: both governance agents as Pods; a policy on the hub is
// copied, evaluated (enforced) on cluster1 and reported Compliant on the hub.
func testGovernancePods(t *testing.T, dataDir string, hub, spokeCfg *rest.Config) {
	ctx := context.Background()
	hubc := hubClient(t, hub)
	spoke := kubernetes.NewForConfigOrDie(spokeCfg)
	enableAddons(t, dataDir, hubc, spoke, governance.FrameworkName, governance.ConfigPolicyName)

	const ns = "nodes-policies"
	// The policy goes to cluster1 only (the one with the agents).
	require.NoError(t, hubc.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"e2e.flotilla.dev/governance":"true"}}}`))))
	require.NoError(t, hubc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, hubc.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "global", Namespace: ns},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"}}))
	require.NoError(t, hubc.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "cluster1", Namespace: ns},
		Spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{"global"}, Predicates: []clusterv1beta1.ClusterPredicate{{
			RequiredClusterSelector: clusterv1beta1.ClusterSelector{LabelSelector: metav1.LabelSelector{
				MatchLabels: map[string]string{"e2e.flotilla.dev/governance": "true"}}}}}}}))
	const tmpl = `{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy",
 "metadata":{"name":"nodes-namespace"},
 "spec":{"remediationAction":"enforce","severity":"low",
  "object-templates":[{"complianceType":"musthave","objectDefinition":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"from-policy"}}}]}}`
	root := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "nodes-namespace", Namespace: ns},
		Spec: policyv1.PolicySpec{RemediationAction: policyv1.Enforce, PolicyTemplates: []*policyv1.PolicyTemplate{
			{ObjectDefinition: runtime.RawExtension{Raw: []byte(tmpl)}}}}}
	require.NoError(t, hubc.Create(ctx, root))
	require.NoError(t, hubc.Create(ctx, &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: "nodes-namespace", Namespace: ns},
		PlacementRef: policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: "cluster1"},
		Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: root.Name}}}))

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var rep policyv1.Policy
		require.NoError(c, hubc.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: ns + "." + root.Name}, &rep))
		assert.Equal(c, policyv1.Compliant, rep.Status.ComplianceState, "the hub replica reports the Pod's evaluation")
	}, timeout, tick)
	_, err := spoke.CoreV1().Namespaces().Get(ctx, "from-policy", metav1.GetOptions{})
	require.NoError(t, err, "the config-policy-controller Pod enforced the policy")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var r policyv1.Policy
		require.NoError(c, hubc.Get(ctx, client.ObjectKey{Namespace: ns, Name: root.Name}, &r))
		assert.Equal(c, policyv1.Compliant, r.Status.ComplianceState, "root policy Compliant on the hub")
	}, timeout, tick)

	require.NoError(t, hubc.Delete(ctx, root))
	disableAddons(t, dataDir, hubc, spoke, governance.FrameworkName, governance.ConfigPolicyName)
}

// testSearchAddonPod: the search agent runs as its Pod from the image's slim
// binary; cluster1's objects reach the hub's index and are found through
// the hub apiserver; the Pod's memory, as its kubelet measures it, is
// logged; disable -> the cluster's objects leave the index.
func testSearchAddonPod(t *testing.T, dataDir string, hub, spokeCfg *rest.Config) {
	ctx := context.Background()
	hubc := hubClient(t, hub)
	spoke := kubernetes.NewForConfigOrDie(spokeCfg)
	enableAddons(t, dataDir, hubc, spoke, search.Name)

	pods, err := spoke.CoreV1().Pods(ocm.DefaultAddonInstallNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=search-agent"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	pod := pods.Items[0]
	assert.Equal(t, []string{"/" + flotillaimage.SearchAgentBinary}, pod.Spec.Containers[0].Command, "the Pod runs the image's slim agent")

	api, err := searchapi.NewClient(hub)
	require.NoError(t, err)
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	found := func(c *assert.CollectT) []string {
		l, err := api.List(ctx, namespaces, "", url.Values{"cluster": {"cluster1"}})
		if apierrors.IsNotFound(err) {
			return nil // no cluster syncs Namespaces (yet, or any more)
		}
		if !assert.NoError(c, err) {
			return nil
		}
		var names []string
		for _, o := range l.Items {
			names = append(names, o.GetName())
		}
		return names
	}
	start := time.Now()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Contains(c, found(c), "kube-system", "cluster1's Namespaces in the hub's index")
	}, timeout, tick)
	t.Logf("search: cluster1's Namespaces found through the hub %s after its agent ran", time.Since(start).Round(100*time.Millisecond))

	// What the agent Pod costs its node: the kubelet's own figures.
	raw, err := spoke.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/" + pod.Spec.NodeName + "/proxy/stats/summary").DoRaw(ctx)
	require.NoError(t, err, "the kubelet's summary through the apiserver")
	var summary struct {
		Pods []struct {
			PodRef     struct{ Name string }
			Containers []struct {
				Name   string
				Memory struct{ WorkingSetBytes, RSSBytes *uint64 }
			}
		}
	}
	require.NoError(t, json.Unmarshal(raw, &summary))
	for _, p := range summary.Pods {
		for _, ctr := range p.Containers {
			if p.PodRef.Name == pod.Name && ctr.Memory.WorkingSetBytes != nil && ctr.Memory.RSSBytes != nil {
				t.Logf("search agent Pod %s: memory working set %.1f MiB, RSS %.1f MiB (kubelet summary)", pod.Name,
					float64(*ctr.Memory.WorkingSetBytes)/(1<<20), float64(*ctr.Memory.RSSBytes)/(1<<20))
			}
		}
	}

	disableAddons(t, dataDir, hubc, spoke, search.Name)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, found(c), "a cluster whose search addon is disabled leaves the index")
	}, timeout, tick)
}
