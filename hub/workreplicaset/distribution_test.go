package workreplicaset

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
	"flotilla.dev/flotilla/hub/workreplicaset/distribute"
	"flotilla.dev/flotilla/internal/placementread"
)

func webTemplate(replicas int) workv1.ManifestWorkSpec {
	raw := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"apps"},"spec":{"replicas":` +
		itoa(replicas) + `,"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`)
	var s workv1.ManifestWorkSpec
	s.Workload.Manifests = []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
	return s
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func regionPolicy(rules ...distv1alpha1.OverrideRule) *distv1alpha1.DistributionPolicy {
	sel := func(r string) distv1alpha1.ClusterSelector {
		return distv1alpha1.ClusterSelector{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": r}}}
	}
	return &distv1alpha1.DistributionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "regions", Namespace: ns},
		Spec: distv1alpha1.DistributionPolicySpec{
			Overrides: append([]distv1alpha1.OverrideRule{
				{Name: "eu-image", Clusters: sel("eu"), Images: []distv1alpha1.ImageOverride{{Component: distv1alpha1.Registry, Value: "registry.eu.example.com"}}},
				{Name: "us-image", Clusters: sel("us"), Images: []distv1alpha1.ImageOverride{{Component: distv1alpha1.Registry, Value: "registry.us.example.com"}}},
			}, rules...),
			Replicas: &distv1alpha1.ReplicaDivision{Type: distv1alpha1.Weighted, Weights: []distv1alpha1.ClusterWeight{{Clusters: sel("eu"), Weight: 2}, {Clusters: sel("us"), Weight: 1}}},
		}}
}

// policyFacts are the facts of a replica set naming policy over eu-1, eu-2, us-1.
func policyFacts(policy *distv1alpha1.DistributionPolicy, works ...*workv1.ManifestWork) Facts {
	tmpl := webTemplate(30)
	return Facts{Generation: 1, Hash: TemplateHash(tmpl), Now: t0, Name: "app", Template: tmpl, PolicyName: "regions", Policy: policy,
		Refs: []RefFacts{refTo("all", placed(placementread.Ready, "eu-1", "eu-2", "us-1"))},
		Clusters: map[string]distribute.Cluster{
			"eu-1": {Name: "eu-1", Labels: map[string]string{"region": "eu"}},
			"eu-2": {Name: "eu-2", Labels: map[string]string{"region": "eu"}},
			"us-1": {Name: "us-1", Labels: map[string]string{"region": "us"}},
		}, Works: works}
}

func replicasAndImage(t *testing.T, s *workv1.ManifestWorkSpec) (float64, string) {
	t.Helper()
	var obj struct {
		Spec struct {
			Replicas float64 `json:"replicas"`
			Template struct {
				Spec struct {
					Containers []struct {
						Image string `json:"image"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	require.NoError(t, json.Unmarshal(s.Workload.Manifests[0].Raw, &obj))
	return obj.Spec.Replicas, obj.Spec.Template.Spec.Containers[0].Image
}

func TestPlanRendersWithThePolicy(t *testing.T) {
	p := plan(policyFacts(regionPolicy()))
	require.Len(t, p.Apply, 3)
	got := map[string][2]any{}
	for _, a := range p.Apply {
		require.NotNil(t, a.Spec)
		n, img := replicasAndImage(t, a.Spec)
		got[a.Cluster] = [2]any{n, img}
		assert.Equal(t, TemplateHash(*a.Spec), a.Hash, "each cluster's revision is its own render's hash")
	}
	assert.Equal(t, map[string][2]any{
		"eu-1": {12.0, "registry.eu.example.com/nginx:1.27"},
		"eu-2": {12.0, "registry.eu.example.com/nginx:1.27"},
		"us-1": {6.0, "registry.us.example.com/nginx:1.27"},
	}, got)
	c := meta.FindStatusCondition(p.Conditions, ConditionDistributionPolicyApplied)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, `DistributionPolicy "regions": overrides eu-image on 2, us-image on 1 clusters; deployment web: 30 replicas over 3 clusters, 0 created, 0 ready, 0 available`, c.Message)
	require.NotNil(t, p.PolicyStatus)
	assert.Equal(t, []distv1alpha1.OverrideCount{{Rule: "eu-image", Clusters: 2}, {Rule: "us-image", Clusters: 1}}, p.PolicyStatus.Overrides)
}

// renderedWork is the work a previous reconcile wrote for cluster under f.
func renderedWork(t *testing.T, f Facts, cluster string) *workv1.ManifestWork {
	t.Helper()
	for _, a := range plan(f).Apply {
		if a.Cluster == cluster {
			w := owned(cluster, "all", a.Hash, cond(workv1.WorkApplied, metav1.ConditionTrue, 1), cond(workv1.WorkAvailable, metav1.ConditionTrue, 1))
			w.Spec = *a.Spec
			w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
				ResourceMeta: workv1.ManifestResourceMeta{Group: "apps", Resource: "deployments", Namespace: "apps", Name: "web"},
				StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
					{Name: distribute.FeedbackReplicas, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(int64(6))}},
					{Name: distribute.FeedbackReady, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(int64(5))}},
					{Name: distribute.FeedbackAvailable, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(int64(4))}}}}}}
			return w
		}
	}
	t.Fatalf("no apply for %s", cluster)
	return nil
}

func TestPlanSteadyWithThePolicy(t *testing.T) {
	f := policyFacts(regionPolicy())
	works := []*workv1.ManifestWork{renderedWork(t, f, "eu-1"), renderedWork(t, f, "eu-2"), renderedWork(t, f, "us-1")}
	p := plan(policyFacts(regionPolicy(), works...))
	assert.Empty(t, p.Apply, "works at their own revisions are not rewritten")
	assert.Equal(t, 3, p.Summary.Updated)
	require.NotNil(t, p.PolicyStatus)
	assert.Equal(t, []distv1alpha1.WorkloadStatus{{Group: "apps", Kind: "Deployment", Namespace: "apps", Name: "web", Desired: 30, Clusters: 3,
		Replicas: 18, ReadyReplicas: 15, AvailableReplicas: 12}}, p.PolicyStatus.Workloads, "ready and available summed from the feedback")
}

func TestPlanFailedRenderKeepsTheLastGoodWork(t *testing.T) {
	good := policyFacts(regionPolicy())
	works := []*workv1.ManifestWork{renderedWork(t, good, "eu-1"), renderedWork(t, good, "eu-2"), renderedWork(t, good, "us-1")}
	bad := regionPolicy(distv1alpha1.OverrideRule{Name: "zone-label", Clusters: distv1alpha1.ClusterSelector{Names: []string{"us-1"}},
		Labels: []distv1alpha1.MetadataOverride{{Key: "zone", Value: "{{ cluster.labels[zone] }}"}}})
	p := plan(policyFacts(bad, works...))
	assert.Empty(t, p.Apply, "us-1 fails; eu-1 and eu-2 render as before")
	assert.Empty(t, p.Delete)
	c := meta.FindStatusCondition(p.Conditions, ConditionDistributionPolicyApplied)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, ReasonRenderFailed, c.Reason)
	assert.Equal(t, `DistributionPolicy "regions": 1 clusters could not be rendered and keep their last good ManifestWork: us-1: `+
		`override "zone-label" on Deployment.apps apps/web: labels[0]: template {{ cluster.labels[zone] }}: cluster us-1 has no label "zone"`, c.Message)
	require.Len(t, p.PolicyStatus.Failures, 1)
	assert.Equal(t, "zone-label", p.PolicyStatus.Failures[0].Rule)

	// A new cluster whose render fails gets no work at all.
	f := policyFacts(bad)
	p = plan(f)
	var clusters []string
	for _, a := range p.Apply {
		clusters = append(clusters, a.Cluster)
	}
	assert.Equal(t, []string{"eu-1", "eu-2"}, clusters)
}

func TestPlanMissingPolicyWritesNothing(t *testing.T) {
	f := policyFacts(nil)
	p := plan(f)
	assert.Empty(t, p.Apply)
	c := meta.FindStatusCondition(p.Conditions, ConditionDistributionPolicyApplied)
	require.NotNil(t, c)
	assert.Equal(t, ReasonPolicyNotFound, c.Reason)
	assert.Contains(t, c.Message, `DistributionPolicy "regions" not found in this namespace; every cluster keeps its current ManifestWork`)
}

func TestPlanDivisionWaitsForSettledDecisions(t *testing.T) {
	f := policyFacts(regionPolicy())
	f.Refs = []RefFacts{refTo("all", placed(placementread.InFlux, "eu-1", "us-1"))}
	p := plan(f)
	assert.Empty(t, p.Apply, "no share is written from a half-written answer")
	c := meta.FindStatusCondition(p.Conditions, ConditionDistributionPolicyApplied)
	assert.Contains(t, c.Message, "replica division waits for every placement's decisions to settle")
}

func TestPlanWithoutPolicyKeepsTheTemplateRevision(t *testing.T) {
	f := policyFacts(nil)
	f.PolicyName = ""
	p := plan(f)
	require.Len(t, p.Apply, 3)
	for _, a := range p.Apply {
		assert.Nil(t, a.Spec)
		assert.Equal(t, f.Hash, a.Hash)
	}
	assert.Nil(t, meta.FindStatusCondition(p.status([]metav1.Condition{{Type: ConditionDistributionPolicyApplied}}).Conditions, ConditionDistributionPolicyApplied),
		"the condition goes when the annotation does")
}

func TestPlanReusesARenderWhileItsInputsStay(t *testing.T) {
	cache := NewRenderCache()
	f := policyFacts(regionPolicy())
	f.Namespace, f.Renders = ns, cache
	first := plan(f)
	require.Len(t, first.Apply, 3)
	key := renderKey(f, distribute.Input{Clusters: []distribute.Cluster{f.Clusters["eu-1"], f.Clusters["eu-2"], f.Clusters["us-1"]}})
	_, ok := cache.get(ns+"/app", key)
	require.True(t, ok, "the render is remembered under its inputs' key")

	// Same inputs: the same plan, from the cache.
	again := plan(f)
	assert.Equal(t, first.Apply, again.Apply)

	// A label changes: a new render (us-1 moves to eu: 10 each).
	f.Clusters["us-1"] = distribute.Cluster{Name: "us-1", Labels: map[string]string{"region": "eu"}}
	changed := plan(f)
	for _, a := range changed.Apply {
		n, img := replicasAndImage(t, a.Spec)
		assert.Equal(t, 10.0, n, a.Cluster)
		assert.Equal(t, "registry.eu.example.com/nginx:1.27", img, a.Cluster)
	}
	// The policy changes (a new generation): a new render too.
	f.Policy = regionPolicy(distv1alpha1.OverrideRule{Name: "extra", Labels: []distv1alpha1.MetadataOverride{{Key: "x", Value: "y"}}})
	f.Policy.Generation = 2
	c := meta.FindStatusCondition(plan(f).Conditions, ConditionDistributionPolicyApplied)
	assert.Contains(t, c.Message, "extra on 3")
}

// A new division rewrites the clusters whose share changed, paced by the
// ref's rollout strategy like a template change.
func TestPlanRolloutPacesADivisionChange(t *testing.T) {
	good := policyFacts(regionPolicy())
	works := []*workv1.ManifestWork{renderedWork(t, good, "eu-1"), renderedWork(t, good, "eu-2"), renderedWork(t, good, "us-1")}
	changed := regionPolicy()
	changed.Spec.Replicas.Weights[1].Weight = 2 // us now weighs as much as eu: 10 each
	f := policyFacts(changed, works...)
	f.Refs[0].Ref.RolloutStrategy = clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive,
		Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intstr.FromInt32(1)}}
	p := plan(f)
	require.Len(t, p.Apply, 1, "one cluster at a time")
	n, _ := replicasAndImage(t, p.Apply[0].Spec)
	assert.Equal(t, 10.0, n)
}

// TestConditionBoundsFailures: however many clusters fail, and however long
// their errors (which may quote a cluster's claims), the condition stays
// within metav1.Condition's 32768 bytes and the policy's failures within
// maxFailureMessage each.
func TestConditionBoundsFailures(t *testing.T) {
	d := distribution{named: true, hash: map[string]string{}, failed: map[string]error{}}
	long := errors.New(strings.Repeat("é", 5000))
	for i := 0; i < 3000; i++ {
		d.failed[fmt.Sprintf("cluster-with-a-long-name-of-sixty-characters-in-all-%08d", i)] = long
	}
	c := d.condition(1, "regions", nil)
	assert.LessOrEqual(t, len(c.Message), 32768)
	assert.True(t, utf8.ValidString(c.Message))
	assert.Contains(t, c.Message, "and 2949 more)")
	st := d.replicaSetStatus("web", nil)
	require.Len(t, st.Failures, 20)
	for _, f := range st.Failures {
		assert.LessOrEqual(t, len(f.Message), maxFailureMessage)
		assert.True(t, utf8.ValidString(f.Message))
	}
}

// TestRenderKeyTellsClaimsApart: a cluster chooses its claims' values; one
// holding the key's separators must not give the key of other claims (the
// render cached for those would be reused).
func TestRenderKeyTellsClaimsApart(t *testing.T) {
	f := policyFacts(regionPolicy())
	key := func(claims map[string]string) string {
		return renderKey(f, distribute.Input{Clusters: []distribute.Cluster{{Name: "eu-1", Claims: claims}}})
	}
	assert.NotEqual(t, key(map[string]string{"a": "x", "b": "y"}), key(map[string]string{"a": "x\x00b=y"}))
	assert.NotEqual(t, key(map[string]string{"a": "x=y"}), key(map[string]string{"a=x": "y"}))
	assert.Equal(t, key(map[string]string{"a": "x", "b": "y"}), key(map[string]string{"b": "y", "a": "x"}))
}
