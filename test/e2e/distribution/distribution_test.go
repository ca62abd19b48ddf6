package distribution_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
	"flotilla.dev/flotilla/hub/work/ops"
	"flotilla.dev/flotilla/hub/workreplicaset"
)

const ns = "apps"

const policyYAML = `
apiVersion: flotilla.dev/v1alpha1
kind: DistributionPolicy
metadata: {name: regions, namespace: apps}
spec:
  overrides:
  - name: eu-registry
    clusters: {labelSelector: {matchLabels: {region: eu}}}
    images: [{component: Registry, value: registry.eu.example.com}]
  - name: us-registry
    clusters: {labelSelector: {matchLabels: {region: us}}}
    images: [{component: Registry, value: registry.us.example.com}]
  - name: cluster-label
    manifests: [{group: apps, kind: Deployment}]
    labels: [{key: example.com/cluster, value: '{{ cluster.name }}'}]
  replicas:
    type: Weighted
    weights:
    - {clusters: {labelSelector: {matchLabels: {region: eu}}}, weight: 2}
    - {clusters: {labelSelector: {matchLabels: {region: us}}}, weight: 1}
`

const deploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 30
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27}]
`

func spoke(i int) kubernetes.Interface { return kubernetes.NewForConfigOrDie(f.Clusters[i].Config) }

// onClusters reads the Deployment default/web on every cluster: "image xN",
// "" where it does not exist.
func onClusters(ctx context.Context) map[string]string {
	out := map[string]string{}
	for i, name := range f.Names {
		d, err := spoke(i).AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			out[name] = ""
		case err != nil:
			out[name] = "error: " + err.Error()
		default:
			out[name] = fmt.Sprintf("%s x%d", d.Spec.Template.Spec.Containers[0].Image, *d.Spec.Replicas)
		}
	}
	return out
}

func setCluster(t *testing.T, ctx context.Context, name string, mutate func(*clusterv1.ManagedCluster)) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var mc clusterv1.ManagedCluster
		if !assert.NoError(c, f.Client.Get(ctx, client.ObjectKey{Name: name}, &mc)) {
			return
		}
		mutate(&mc)
		assert.NoError(c, f.Client.Update(ctx, &mc))
	}, timeout, tick)
}

// The done-when, on real agents: three clusters labelled
// region=eu/us, one manifest, an image override per region, 30 replicas
// divided 2:1 by weight, seen on the clusters; a tainted cluster's share
// moves and the total stays 30; it returns with minimal change; a bad
// override gives a clear condition and nothing broken is delivered.
func TestDistributionPolicyOnTheFleet(t *testing.T) {
	ctx := context.Background()
	require.Len(t, f.Names, 3)
	eu1, eu2, us1 := f.Names[0], f.Names[1], f.Names[2]
	for name, region := range map[string]string{eu1: "eu", eu2: "eu", us1: "us"} {
		setCluster(t, ctx, name, func(mc *clusterv1.ManagedCluster) { mc.Labels["region"] = region })
	}
	require.NoError(t, f.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, f.Client.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "global", Namespace: ns},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"}}))
	require.NoError(t, f.Client.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{"global"}}}))
	var policy distv1alpha1.DistributionPolicy
	require.NoError(t, yaml.UnmarshalStrict([]byte(policyYAML), &policy))
	require.NoError(t, f.Client.Create(ctx, &policy))
	file := filepath.Join(t.TempDir(), "deployment.yaml")
	require.NoError(t, os.WriteFile(file, []byte(deploymentYAML), 0o600))
	manifests, err := ops.LoadManifests(file)
	require.NoError(t, err)
	var progress bytes.Buffer
	_, err = ops.CreateWorks(ctx, f.Client, ops.CreateOptions{Name: "web", Manifests: manifests, Placement: ns + "/web", ReplicaSet: true,
		DistributionPolicy: "regions", Progress: &progress})
	require.NoError(t, err)
	t.Log(progress.String())

	divided := map[string]string{eu1: "registry.eu.example.com/nginx:1.27 x12", eu2: "registry.eu.example.com/nginx:1.27 x12", us1: "registry.us.example.com/nginx:1.27 x6"}
	require.EventuallyWithT(t, func(c *assert.CollectT) { assert.Equal(c, divided, onClusters(ctx)) }, timeout, tick)
	d, err := spoke(2).AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, us1, d.Labels["example.com/cluster"], "the template put the cluster's own name")

	// Aggregated status from the three clusters' feedback: 30 pods created
	// (these clusters have a controller manager but no node, so none gets
	// ready: ready and available are 0, which is what they report).
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		sets, err := ops.ListReplicaSets(ctx, f.Client, ns)
		if !assert.NoError(c, err) || !assert.Len(c, sets, 1) || !assert.Len(c, sets[0].Workloads, 1) {
			return
		}
		wl := sets[0].Workloads[0]
		assert.Equal(c, [5]int64{30, 3, 30, 0, 0}, [5]int64{wl.Desired, wl.Clusters, wl.Replicas, wl.ReadyReplicas, wl.AvailableReplicas})
		assert.Equal(c, []distv1alpha1.OverrideCount{{Rule: "eu-registry", Clusters: 2}, {Rule: "us-registry", Clusters: 1}, {Rule: "cluster-label", Clusters: 3}}, sets[0].Overrides)
	}, timeout, tick)
	if t.Failed() {
		var w workv1.ManifestWork
		_ = f.Client.Get(ctx, client.ObjectKey{Namespace: us1, Name: "web"}, &w)
		out, _ := yaml.Marshal(w.Status)
		t.Logf("work status on %s: %s", us1, out)
		var p distv1alpha1.DistributionPolicy
		_ = f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "regions"}, &p)
		out, _ = yaml.Marshal(p.Status)
		t.Logf("policy status: %s", out)
		d, err := spoke(2).AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err == nil {
			out, _ = yaml.Marshal(d.Status)
			t.Logf("deployment status on %s: %s", us1, out)
		}
		t.FailNow()
	}
	var table bytes.Buffer
	sets, err := ops.ListReplicaSets(ctx, f.Client, ns)
	require.NoError(t, err)
	require.NoError(t, ops.PrintReplicaSets(&table, "table", sets))
	assert.Contains(t, table.String(), "deployment/web 0/0/30")

	// eu-2 tainted: it leaves the placement, its work (and Deployment) go,
	// its 12 replicas move to eu-1 and us-1 (2:1), the total stays 30.
	setCluster(t, ctx, eu2, func(mc *clusterv1.ManagedCluster) {
		mc.Spec.Taints = append(mc.Spec.Taints, clusterv1.Taint{Key: "example.com/maintenance", Effect: clusterv1.TaintEffectNoSelect, TimeAdded: metav1.NewTime(time.Now())})
	})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, map[string]string{eu1: "registry.eu.example.com/nginx:1.27 x20", eu2: "", us1: "registry.us.example.com/nginx:1.27 x10"}, onClusters(ctx))
	}, timeout, tick)

	// It returns: eu-2 gets 12 back, taken from the other two; 12/12/6 again.
	setCluster(t, ctx, eu2, func(mc *clusterv1.ManagedCluster) {
		var kept []clusterv1.Taint
		for _, tt := range mc.Spec.Taints {
			if tt.Key != "example.com/maintenance" {
				kept = append(kept, tt)
			}
		}
		mc.Spec.Taints = kept
	})
	require.EventuallyWithT(t, func(c *assert.CollectT) { assert.Equal(c, divided, onClusters(ctx)) }, timeout, tick)

	// A bad override: a label us-1 lacks. us-1's render fails with a
	// condition naming the rule; its work is not written, and what runs
	// there stays as it was; the eu clusters get the override.
	var before workv1.ManifestWork
	require.NoError(t, f.Client.Get(ctx, client.ObjectKey{Namespace: us1, Name: "web"}, &before))
	setCluster(t, ctx, eu1, func(mc *clusterv1.ManagedCluster) { mc.Labels["zone"] = "eu-west-1a" })
	setCluster(t, ctx, eu2, func(mc *clusterv1.ManagedCluster) { mc.Labels["zone"] = "eu-west-1b" })
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var p distv1alpha1.DistributionPolicy
		if !assert.NoError(c, f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "regions"}, &p)) {
			return
		}
		p.Spec.Overrides = append(p.Spec.Overrides, distv1alpha1.OverrideRule{Name: "zone",
			Annotations: []distv1alpha1.MetadataOverride{{Key: "example.com/zone", Value: "{{ cluster.labels[zone] }}"}}})
		assert.NoError(c, f.Client.Update(ctx, &p))
	}, timeout, tick)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var m workv1alpha1.ManifestWorkReplicaSet
		if !assert.NoError(c, f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &m)) {
			return
		}
		cond := meta.FindStatusCondition(m.Status.Conditions, workreplicaset.ConditionDistributionPolicyApplied)
		if assert.NotNil(c, cond) {
			assert.Equal(c, workreplicaset.ReasonRenderFailed, cond.Reason)
			assert.Contains(c, cond.Message, us1+`: override "zone" on Deployment.apps default/web: annotations[0]: template {{ cluster.labels[zone] }}: cluster `+us1+` has no label "zone"`)
		}
		d, err := spoke(0).AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if assert.NoError(c, err) {
			assert.Equal(c, "eu-west-1a", d.Annotations["example.com/zone"])
		}
	}, timeout, tick)
	var after workv1.ManifestWork
	require.NoError(t, f.Client.Get(ctx, client.ObjectKey{Namespace: us1, Name: "web"}, &after))
	assert.Equal(t, before.Spec, after.Spec, "us-1's work was not rewritten")
	d, err = spoke(2).AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, d.Annotations, "example.com/zone")
	assert.Equal(t, "registry.us.example.com/nginx:1.27", d.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, int32(6), *d.Spec.Replicas)
}
