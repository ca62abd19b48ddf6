package placement_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
	"flotilla.dev/flotilla/hub/workreplicaset"
)

// shares reads, per cluster, the Deployment's replicas and image in the
// replica set's works.
func (s *scope) shares(mwrs string) map[string]string {
	var list workv1.ManifestWorkList
	if err := hub.List(s.ctx, &list, client.MatchingLabels{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: s.ns + "." + mwrs}); err != nil {
		return nil
	}
	out := map[string]string{}
	for _, w := range list.Items {
		var d struct {
			Spec struct {
				Replicas int `json:"replicas"`
				Template struct {
					Spec struct {
						Containers []struct {
							Image string `json:"image"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &d) != nil || len(d.Spec.Template.Spec.Containers) == 0 {
			continue
		}
		out[w.Namespace] = d.Spec.Template.Spec.Containers[0].Image + " x" + itoa(d.Spec.Replicas)
	}
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func regionSelector(r string) distv1alpha1.ClusterSelector {
	return distv1alpha1.ClusterSelector{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": r}}}
}

// The scenario on a real hub (placement and replica set controllers,
// no agents): three clusters labelled region=eu/us, an image override per
// region, 30 replicas divided 2:1 by weight; a tainted cluster's share moves
// to the others and comes back; a bad override fails its cluster's render
// with a condition naming the rule, and its work stays as it was.
func TestManifestWorkReplicaSetDistributionPolicy(t *testing.T) {
	s := newScope(t, "dist")
	for _, c := range []struct{ name, region string }{{"dist-eu-1", "eu"}, {"dist-eu-2", "eu"}, {"dist-us-1", "us"}} {
		require.NoError(t, hub.Create(s.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.name}}))
		s.cluster(c.name, map[string]string{"region": c.region})
	}
	s.placement(st.Placement("all", "").Obj())
	s.eventuallyDecided("all", "dist-eu-1", "dist-eu-2", "dist-us-1")

	policy := &distv1alpha1.DistributionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "regions", Namespace: s.ns},
		Spec: distv1alpha1.DistributionPolicySpec{
			Overrides: []distv1alpha1.OverrideRule{
				{Name: "eu-registry", Clusters: regionSelector("eu"), Images: []distv1alpha1.ImageOverride{{Component: distv1alpha1.Registry, Value: "registry.eu.example.com"}}},
				{Name: "us-registry", Clusters: regionSelector("us"), Images: []distv1alpha1.ImageOverride{{Component: distv1alpha1.Registry, Value: "registry.us.example.com"}}},
			},
			Replicas: &distv1alpha1.ReplicaDivision{Type: distv1alpha1.Weighted, Weights: []distv1alpha1.ClusterWeight{
				{Clusters: regionSelector("eu"), Weight: 2}, {Clusters: regionSelector("us"), Weight: 1}}},
		}}
	require.NoError(t, hub.Create(s.ctx, policy))
	deployment := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},
"spec":{"replicas":30,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`
	mwrs := &workv1alpha1.ManifestWorkReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: s.ns, Annotations: map[string]string{distv1alpha1.PolicyAnnotation: "regions"}},
		Spec: workv1alpha1.ManifestWorkReplicaSetSpec{
			ManifestWorkTemplate: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(deployment)}}}}},
			PlacementRefs:        []workv1alpha1.LocalPlacementReference{{Name: "all"}},
		},
	}
	require.NoError(t, hub.Create(s.ctx, mwrs))

	divided := map[string]string{
		"dist-eu-1": "registry.eu.example.com/nginx:1.27 x12",
		"dist-eu-2": "registry.eu.example.com/nginx:1.27 x12",
		"dist-us-1": "registry.us.example.com/nginx:1.27 x6",
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) { assert.Equal(c, divided, s.shares("web")) }, timeout, tick)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cond := meta.FindStatusCondition(s.mwrsStatus("web").Conditions, workreplicaset.ConditionDistributionPolicyApplied)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionTrue, cond.Status)
			assert.Contains(c, cond.Message, "overrides eu-registry on 2, us-registry on 1 clusters; deployment web: 30 replicas over 3 clusters")
		}
		var p distv1alpha1.DistributionPolicy
		assert.NoError(c, hub.Get(s.ctx, client.ObjectKeyFromObject(policy), &p))
		if assert.Len(c, p.Status.ReplicaSets, 1) {
			assert.Equal(c, []distv1alpha1.OverrideCount{{Rule: "eu-registry", Clusters: 2}, {Rule: "us-registry", Clusters: 1}}, p.Status.ReplicaSets[0].Overrides)
		}
	}, timeout, tick)

	// Tainted: eu-2 leaves the placement, its 12 replicas go to eu-1 and us-1 (2:1), the total stays 30.
	taint := func(on bool) {
		s.patchCluster("dist-eu-2", func(c *clusterv1.ManagedCluster) {
			c.Spec.Taints = nil
			if on {
				c.Spec.Taints = []clusterv1.Taint{{Key: "example.com/maintenance", Effect: clusterv1.TaintEffectNoSelect, TimeAdded: metav1.NewTime(time.Now())}}
			}
		}, false)
	}
	taint(true)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, map[string]string{
			"dist-eu-1": "registry.eu.example.com/nginx:1.27 x20",
			"dist-us-1": "registry.us.example.com/nginx:1.27 x10",
		}, s.shares("web"))
	}, timeout, tick)

	// Back: the division returns to 12/12/6 (eu-2 takes its share back; nothing else moves).
	taint(false)
	require.EventuallyWithT(t, func(c *assert.CollectT) { assert.Equal(c, divided, s.shares("web")) }, timeout, tick)

	// A bad override (a label us-1 does not have): us-1's render fails, the
	// condition names the rule, and us-1's work stays as it was; the others
	// still render.
	var before workv1.ManifestWork
	require.NoError(t, hub.Get(s.ctx, client.ObjectKey{Namespace: "dist-us-1", Name: "web"}, &before))
	require.NoError(t, hub.Get(s.ctx, client.ObjectKeyFromObject(policy), policy))
	policy.Spec.Overrides = append(policy.Spec.Overrides, distv1alpha1.OverrideRule{Name: "zone-annotation",
		Annotations: []distv1alpha1.MetadataOverride{{Key: "example.com/zone", Value: "{{ cluster.labels[zone] }}"}}})
	require.NoError(t, hub.Update(s.ctx, policy))
	s.patchCluster("dist-eu-1", func(c *clusterv1.ManagedCluster) { c.Labels["zone"] = "eu-west-1a" }, false)
	s.patchCluster("dist-eu-2", func(c *clusterv1.ManagedCluster) { c.Labels["zone"] = "eu-west-1b" }, false)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cond := meta.FindStatusCondition(s.mwrsStatus("web").Conditions, workreplicaset.ConditionDistributionPolicyApplied)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, workreplicaset.ReasonRenderFailed, cond.Reason)
			assert.Contains(c, cond.Message, `dist-us-1: override "zone-annotation" on Deployment.apps default/web: annotations[0]: template {{ cluster.labels[zone] }}: cluster dist-us-1 has no label "zone"`)
		}
		var w workv1.ManifestWork
		assert.NoError(c, hub.Get(s.ctx, client.ObjectKey{Namespace: "dist-eu-1", Name: "web"}, &w))
		assert.Contains(c, string(w.Spec.Workload.Manifests[0].Raw), `"example.com/zone":"eu-west-1a"`)
	}, timeout, tick)
	var after workv1.ManifestWork
	require.NoError(t, hub.Get(s.ctx, client.ObjectKey{Namespace: "dist-us-1", Name: "web"}, &after))
	assert.Equal(t, before.Spec, after.Spec, "us-1 keeps its last good work")
	assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "and it was not written at all")

	// Deleted: the works go, and so does the replica set's entry in the policy's status.
	require.NoError(t, hub.Delete(s.ctx, mwrs))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, s.workClusters("web"))
		var p distv1alpha1.DistributionPolicy
		assert.NoError(c, hub.Get(s.ctx, client.ObjectKeyFromObject(policy), &p))
		assert.Empty(c, p.Status.ReplicaSets)
	}, timeout, tick)
}

// The hub's webhook refuses what the CRD schema cannot judge
// (distribute.Validate), on a real apiserver, and admits a good policy.
func TestDistributionPolicyWebhook(t *testing.T) {
	s := newScope(t, "distwebhook")
	create := func(name string, rule distv1alpha1.OverrideRule) error {
		rule.Name = "r"
		return hub.Create(s.ctx, &distv1alpha1.DistributionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
			Spec: distv1alpha1.DistributionPolicySpec{Overrides: []distv1alpha1.OverrideRule{rule}}})
	}
	for _, tc := range []struct {
		name    string
		rule    distv1alpha1.OverrideRule
		refusal string
	}{
		{"bad-selector", distv1alpha1.OverrideRule{Clusters: distv1alpha1.ClusterSelector{LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Near", Values: []string{"eu"}}}}}},
			`spec.overrides[0].clusters: labelSelector: "Near" is not a valid label selector operator`},
		{"bad-template", distv1alpha1.OverrideRule{Annotations: []distv1alpha1.MetadataOverride{{Key: "a", Value: "{{ cluster.region }}"}}},
			`spec.overrides[0].annotations[0].value: template "{{ cluster.region }}": want {{ cluster.name }}`},
		{"bad-label-value", distv1alpha1.OverrideRule{Labels: []distv1alpha1.MetadataOverride{{Key: "a", Value: "two words"}}},
			`spec.overrides[0].labels[0].value: "two words"`},
		{"patch-without-value", distv1alpha1.OverrideRule{JSONPatch: []distv1alpha1.JSONPatchOperation{{Op: "add", Path: "/spec/x"}}},
			`spec.overrides[0].jsonPatch: [0] add /spec/x: needs a value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := create(tc.name, tc.rule)
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
			assert.Contains(t, err.Error(), "DistributionPolicy distwebhook/"+tc.name+" is invalid: "+tc.refusal)
		})
	}
	require.NoError(t, create("good", distv1alpha1.OverrideRule{Labels: []distv1alpha1.MetadataOverride{{Key: "region", Value: "{{ cluster.labels[region] }}"}}}))
}

// Capacity division on a real hub: shares follow what fits in each
// ManagedCluster's status.allocatable given the pod's requests.
func TestManifestWorkReplicaSetCapacityDivision(t *testing.T) {
	s := newScope(t, "cap")
	alloc := map[string][2]string{"cap-large": {"16", "64Gi"}, "cap-small": {"2", "16Gi"}}
	for name, cpuMem := range alloc {
		require.NoError(t, hub.Create(s.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
		s.cluster(name, nil)
		cpuMem := cpuMem
		s.patchCluster(name, func(c *clusterv1.ManagedCluster) {
			c.Status.Allocatable = clusterv1.ResourceList{
				clusterv1.ResourceCPU: resource.MustParse(cpuMem[0]), clusterv1.ResourceMemory: resource.MustParse(cpuMem[1])}
		}, true)
	}
	s.placement(st.Placement("all", "").Obj())
	s.eventuallyDecided("all", "cap-large", "cap-small")
	require.NoError(t, hub.Create(s.ctx, &distv1alpha1.DistributionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "fit", Namespace: s.ns},
		Spec: distv1alpha1.DistributionPolicySpec{Replicas: &distv1alpha1.ReplicaDivision{Type: distv1alpha1.Capacity}}}))
	// 500m per pod: 32 fit in large, 4 in small; 18 replicas -> 16 and 2.
	deployment := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},
"spec":{"replicas":18,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
"spec":{"containers":[{"name":"web","image":"nginx:1.27","resources":{"requests":{"cpu":"500m"}}}]}}}}`
	require.NoError(t, hub.Create(s.ctx, &workv1alpha1.ManifestWorkReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: s.ns, Annotations: map[string]string{distv1alpha1.PolicyAnnotation: "fit"}},
		Spec: workv1alpha1.ManifestWorkReplicaSetSpec{
			ManifestWorkTemplate: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(deployment)}}}}},
			PlacementRefs:        []workv1alpha1.LocalPlacementReference{{Name: "all"}},
		},
	}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, map[string]string{"cap-large": "nginx:1.27 x16", "cap-small": "nginx:1.27 x2"}, s.shares("web"))
	}, timeout, tick)
}
