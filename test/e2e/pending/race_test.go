package pending_test

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/scheme"
)

// round tells the runs of -count=N apart: each works in its own namespace,
// cluster set and clusters.
var round atomic.Int32

var (
	decisionsGVR = schema.GroupVersionResource{Group: clusterv1beta1.GroupName, Version: "v1beta1", Resource: "placementdecisions"}
	policiesGVR  = schema.GroupVersionResource{Group: policyv1.GroupName, Version: "v1", Resource: "policies"}
	worksGVR     = schema.GroupVersionResource{Group: workv1.GroupName, Version: "v1", Resource: "manifestworks"}
)

// TestPendingClusterIsNeverPlaced tests the race, not the steady state. A
// bound cluster set has two Placements already waiting (one tolerates the
// availability taints, so that only acceptance keeps a pending cluster out of
// it), a Policy bound to both and a ManifestWorkReplicaSet on both. Two
// clusters join the set with the bootstrap identity (hubAcceptsClient=false),
// one named after an existing namespace (where a replica or a work could be
// written). From before they exist until the hub has acted on a later event
// everywhere (a sentinel cluster, accepted and Available, joining the set
// after them, is decided by both placements and receives its replica and its
// work: every controller has then read a view holding the pending clusters),
// watches on the PlacementDecisions, on every Policy and on every ManifestWork
// must never show a pending cluster. Each pending cluster is stored with the
// unreachable NoSelect taint from its first version (admission).
func TestPendingClusterIsNeverPlaced(t *testing.T) {
	ctx := t.Context()
	n := round.Add(1)
	ns := fmt.Sprintf("race-%d", n)
	squat, joining, sentinel := fmt.Sprintf("squat-%d", n), fmt.Sprintf("joining-%d", n), fmt.Sprintf("sentinel-%d", n)
	admin, err := client.New(env.Hub.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	create := func(o client.Object) {
		t.Helper()
		require.NoError(t, admin.Create(ctx, o))
		t.Cleanup(func() { _ = admin.Delete(t.Context(), o) })
	}

	// The stage.
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: squat}}) // someone's namespace
	create(&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	create(&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: ns, Namespace: ns},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: ns}})
	exists := clusterv1beta1.TolerationOpExists
	create(&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "tolerant", Namespace: ns}, Spec: clusterv1beta1.PlacementSpec{
		Tolerations: []clusterv1beta1.Toleration{{Key: clusterv1.ManagedClusterTaintUnreachable, Operator: exists},
			{Key: clusterv1.ManagedClusterTaintUnavailable, Operator: exists}}}})
	create(&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns}})
	create(&policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: ns},
		Spec: policyv1.PolicySpec{RemediationAction: "inform", PolicyTemplates: []*policyv1.PolicyTemplate{{ObjectDefinition: runtime.RawExtension{Raw: []byte(
			`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"guard"},` +
				`"spec":{"remediationAction":"inform","severity":"low","object-templates":[{"complianceType":"musthave",` +
				`"objectDefinition":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"{{hub .ManagedClusterName hub}}"}}}]}}`)}}}}})
	for _, p := range []string{"tolerant", "plain"} {
		create(&policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: "guard-" + p, Namespace: ns},
			PlacementRef: policyv1.PlacementSubject{APIGroup: clusterv1beta1.GroupName, Kind: "Placement", Name: p},
			Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: "guard"}}})
	}
	create(&workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: workv1alpha1.ManifestWorkReplicaSetSpec{
		ManifestWorkTemplate: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"default"},"data":{"k":"v"}}`)}}}}},
		PlacementRefs: []workv1alpha1.LocalPlacementReference{{Name: "tolerant"}, {Name: "plain"}}}})
	// The placements wait: they have answered for their spec (an empty set).
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, name := range []string{"tolerant", "plain"} {
			var p clusterv1beta1.Placement
			if assert.NoError(c, admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)) {
				cond := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)
				assert.True(c, cond != nil && cond.ObservedGeneration == p.Generation, "placement %s has not answered", name)
			}
		}
	}, time.Minute, 100*time.Millisecond)

	// Watch from here on: every version of every object, nothing missed.
	dyn := dynamic.NewForConfigOrDie(env.Hub.Config)
	watchFrom := func(gvr schema.GroupVersionResource, namespace string) watch.Interface {
		t.Helper()
		list, err := dyn.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		w, err := dyn.Resource(gvr).Namespace(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		require.NoError(t, err)
		t.Cleanup(w.Stop)
		return w
	}
	decisions, policies, works := watchFrom(decisionsGVR, ns), watchFrom(policiesGVR, ""), watchFrom(worksGVR, "")

	// The race: two joins nobody accepted, into the bound set (the bootstrap
	// identity may join any set).
	boot, err := client.New(&rest.Config{Host: env.Hub.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: env.Hub.CAPEM}},
		client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	pending := []string{squat, joining}
	for _, name := range pending {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: ns}},
			Spec: clusterv1.ManagedClusterSpec{LeaseDurationSeconds: 60}}
		require.NoError(t, boot.Create(ctx, mc), "the bootstrap identity registers %s", name)
		t.Cleanup(func() { _ = admin.Delete(t.Context(), mc) })
		assert.True(t, hasTaint(mc.Spec.Taints, clusterv1.ManagedClusterTaintUnreachable, clusterv1.TaintEffectNoSelect),
			"%s is stored tainted unreachable from its first version: %v", name, mc.Spec.Taints)
	}

	// The sentinel joins after them, accepted by an admin, and reports Available.
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: sentinel, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: ns}},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true, LeaseDurationSeconds: 60}}
	create(mc)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NoError(c, admin.Get(ctx, client.ObjectKeyFromObject(mc), mc))
		assert.True(c, meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted), "the hub accepts the sentinel")
	}, time.Minute, 100*time.Millisecond)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(mc), mc); err != nil {
			return err
		}
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable,
			Status: metav1.ConditionTrue, Reason: "ManagedClusterAvailable", Message: "reported by the test as the agent would"})
		return admin.Status().Update(ctx, mc)
	}))

	// Until the hub has acted on the sentinel everywhere, no event may name a
	// pending cluster.
	seen := map[string]bool{}
	want := []string{"decided by tolerant", "decided by plain", "replica", "work"}
	done := func() bool {
		for _, w := range want {
			if !seen[w] {
				return false
			}
		}
		return true
	}
	hang := time.NewTimer(2 * time.Minute) // a bound on a hang, never waited out on success
	defer hang.Stop()
	for !done() {
		var ev watch.Event
		var ok bool
		select {
		case ev, ok = <-decisions.ResultChan():
		case ev, ok = <-policies.ResultChan():
		case ev, ok = <-works.ResultChan():
		case <-hang.C:
			t.Fatalf("the hub did not act on sentinel %s within 2m (seen %v)", sentinel, seen)
		}
		require.True(t, ok, "a watch ended")
		require.NotEqual(t, watch.Error, ev.Type, "watch error: %v", ev.Object)
		u, isObj := ev.Object.(*unstructured.Unstructured)
		if !isObj {
			continue
		}
		switch u.GetKind() {
		case "PlacementDecision":
			placement := u.GetLabels()[clusterv1beta1.PlacementLabel]
			decided, _, _ := unstructured.NestedSlice(u.Object, "status", "decisions")
			for _, d := range decided {
				name, _ := d.(map[string]any)["clusterName"].(string)
				if slices.Contains(pending, name) {
					t.Errorf("%s %s/%s decides pending cluster %s", ev.Type, u.GetNamespace(), u.GetName(), name)
				}
				if name == sentinel && ev.Type != watch.Deleted {
					seen["decided by "+placement] = true
				}
			}
		case "Policy":
			if slices.Contains(pending, u.GetNamespace()) {
				t.Errorf("%s Policy %s/%s: a replica for pending cluster %s", ev.Type, u.GetNamespace(), u.GetName(), u.GetNamespace())
			}
			if u.GetNamespace() == sentinel && u.GetName() == ns+".guard" {
				seen["replica"] = true
			}
		case "ManifestWork":
			if slices.Contains(pending, u.GetNamespace()) {
				t.Errorf("%s ManifestWork %s/%s: a work for pending cluster %s", ev.Type, u.GetNamespace(), u.GetName(), u.GetNamespace())
			}
			if u.GetNamespace() == sentinel && u.GetName() == "app" {
				seen["work"] = true
			}
		}
	}

	// The pending clusters are still pending and tainted: nothing of the hub's
	// took the taint off a cluster that never reported.
	for _, name := range pending {
		var got clusterv1.ManagedCluster
		require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: name}, &got))
		assert.False(t, got.Spec.HubAcceptsClient, name)
		assert.True(t, hasTaint(got.Spec.Taints, clusterv1.ManagedClusterTaintUnreachable, clusterv1.TaintEffectNoSelect), "%s: %v", name, got.Spec.Taints)
	}
}

func hasTaint(taints []clusterv1.Taint, key string, effect clusterv1.TaintEffect) bool {
	for _, t := range taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}
