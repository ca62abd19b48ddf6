package workreplicaset

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"flotilla.dev/flotilla/internal/placementread/placementtest"
	"flotilla.dev/flotilla/internal/scheme"
)

// Unit tests of Reconcile's data-safety rules on a fake client (the read errors
// cannot be provoked on a real apiserver); the happy paths and the deleted and
// recreated Placement run on a real hub in hub/placement's integration tests.

const ns = "apps"

func testPlacement(selected int32, scheduled bool) *clusterv1beta1.Placement {
	return placementtest.Placement(ns, selected, scheduled)
}

func testDecision(name, ownerUID string, clusters ...string) *clusterv1beta1.PlacementDecision {
	return placementtest.Decision(ns, name, ownerUID, clusters...)
}

func testMWRS() *workv1alpha1.ManifestWorkReplicaSet {
	return &workv1alpha1.ManifestWorkReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns, Generation: 1, Finalizers: []string{workv1alpha1.ManifestWorkReplicaSetFinalizer}},
		Spec:       workv1alpha1.ManifestWorkReplicaSetSpec{PlacementRefs: []workv1alpha1.LocalPlacementReference{{Name: "all"}}},
	}
}

func generatedWork(cluster string) *workv1.ManifestWork {
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: cluster, Labels: map[string]string{
		workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: ns + ".app",
		workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey:  "all"}}}
}

// accepted is a ManagedCluster the hub accepted (ocm.Accepted).
func accepted(name string) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
		Status: clusterv1.ManagedClusterStatus{Conditions: []metav1.Condition{{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionTrue}}}}
}

func TestReconcileKeepsWorksWhenDecisionsCannotBeUsed(t *testing.T) {
	errBoom := errors.New("etcdserver: request timed out")
	failList := interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*clusterv1beta1.PlacementDecisionList); ok {
			return errBoom
		}
		return c.List(ctx, list, opts...)
	}}
	failGet := interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*clusterv1beta1.Placement); ok {
			return errBoom
		}
		return c.Get(ctx, key, obj, opts...)
	}}
	tests := []struct {
		name      string
		objects   []client.Object
		funcs     interceptor.Funcs
		wantErr   bool
		works     []string // clusters that still have a work afterwards
		reason    string   // PlacementVerified reason
		message   string   // part of its message
		requeueOK bool     // RequeueAfter > 0 when no error
	}{
		{name: "Placement missing: works kept",
			works: []string{"c1", "c2"}, reason: workv1alpha1.ReasonPlacementDecisionNotFound,
			message: `Placement "all" not found in this namespace; its 2 ManifestWorks are kept`, requeueOK: true},
		{name: "Placement read error: works kept, error returned (requeue with backoff)",
			objects: []client.Object{testPlacement(2, true), testDecision("all-decision-1", "p-uid", "c1", "c2")}, funcs: failGet,
			wantErr: true, works: []string{"c1", "c2"}, reason: workv1alpha1.ReasonPlacementDecisionNotFound,
			message: "could not be read: etcdserver: request timed out"},
		{name: "decision list error: works kept, error returned (requeue with backoff)",
			objects: []client.Object{testPlacement(2, true)}, funcs: failList,
			wantErr: true, works: []string{"c1", "c2"}, reason: workv1alpha1.ReasonPlacementDecisionNotFound,
			message: "has decisions that could not be read"},
		{name: "Placement (re)created, not scheduled yet: works kept",
			objects: []client.Object{testPlacement(0, false)},
			works:   []string{"c1", "c2"}, reason: workv1alpha1.ReasonPlacementDecisionNotFound,
			message: "has not published decisions for its current spec yet", requeueOK: true},
		{name: "only a predecessor's decisions left (not yet garbage collected): in flux, works kept",
			objects: []client.Object{testPlacement(2, true), testDecision("all-decision-1", "old-uid", "c1")},
			works:   []string{"c1", "c2"}, reason: workv1alpha1.ReasonAsExpected, requeueOK: true},
		{name: "decisions being rewritten (c2 between pages): in flux, works kept",
			objects: []client.Object{testPlacement(2, true), testDecision("all-decision-1", "p-uid", "c1")},
			works:   []string{"c1", "c2"}, reason: workv1alpha1.ReasonAsExpected, requeueOK: true},
		{name: "control: settled decisions without c2 delete c2's work",
			objects: []client.Object{testPlacement(1, true), testDecision("all-decision-1", "p-uid", "c1")},
			works:   []string{"c1"}, reason: workv1alpha1.ReasonAsExpected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := append([]client.Object{testMWRS(), generatedWork("c1"), generatedWork("c2"), accepted("c1"), accepted("c2")}, tc.objects...)
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).
				WithStatusSubresource(&workv1alpha1.ManifestWorkReplicaSet{}, &workv1.ManifestWork{}).
				WithInterceptorFuncs(tc.funcs).Build()
			r := &Reconciler{Client: c, now: func() time.Time { return t0 }}
			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "app"}})
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			if tc.requeueOK {
				assert.Positive(t, res.RequeueAfter, "looks again")
			}

			var works workv1.ManifestWorkList
			require.NoError(t, c.List(context.Background(), &works))
			var have []string
			for _, w := range works.Items {
				have = append(have, w.Namespace)
			}
			sort.Strings(have)
			assert.Equal(t, tc.works, have)

			var m workv1alpha1.ManifestWorkReplicaSet
			require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "app"}, &m))
			v := meta.FindStatusCondition(m.Status.Conditions, workv1alpha1.ManifestWorkReplicaSetConditionPlacementVerified)
			require.NotNil(t, v)
			assert.Equal(t, tc.reason, v.Reason)
			assert.Contains(t, v.Message, tc.message)
			assert.Equal(t, len(tc.works), m.Status.Summary.Total, "kept works are counted")
			if assert.Len(t, m.Status.PlacementsSummary, 1) {
				assert.Equal(t, len(tc.works), m.Status.PlacementsSummary[0].Summary.Total, "kept works are counted for the ref")
			}
		})
	}
}

// TestReconcileWritesNoWorkForUnacceptedClusters: a cluster the hub has not
// accepted (pending, denied, gone) gets no work, even when a placement decides
// it (a decision written before the placement saw it); a work it has is left
// as it is. Accepted clusters roll out as usual.
func TestReconcileWritesNoWorkForUnacceptedClusters(t *testing.T) {
	pending := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "pending"}}
	denied := accepted("denied")
	denied.Spec.HubAcceptsClient = false
	had := generatedWork("denied")
	had.Spec.Workload.Manifests = nil
	objs := []client.Object{testMWRS(), testPlacement(4, true), testDecision("all-decision-1", "p-uid", "ok", "pending", "denied", "gone"),
		accepted("ok"), pending, denied, had}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).
		WithStatusSubresource(&workv1alpha1.ManifestWorkReplicaSet{}, &workv1.ManifestWork{}).Build()
	r := &Reconciler{Client: c, now: func() time.Time { return t0 }}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "app"}})
	require.NoError(t, err)

	var works workv1.ManifestWorkList
	require.NoError(t, c.List(context.Background(), &works))
	have := map[string]string{}
	for _, w := range works.Items {
		have[w.Namespace] = w.Annotations[TemplateHashAnnotation]
	}
	assert.Equal(t, map[string]string{"ok": TemplateHash(testMWRS().Spec.ManifestWorkTemplate), "denied": ""}, have,
		"only the accepted cluster gets a work; the denied cluster's work is left unchanged")
}

// TestReconcileWritesConditionsThatAloneChanged: a status whose only change is
// in its conditions (here a new generation, nothing else different) is
// written; the conditions read are not changed in place before the comparison.
func TestReconcileWritesConditionsThatAloneChanged(t *testing.T) {
	objs := []client.Object{testMWRS(), testPlacement(1, true), testDecision("all-decision-1", "p-uid", "c1"), accepted("c1")}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).
		WithStatusSubresource(&workv1alpha1.ManifestWorkReplicaSet{}, &workv1.ManifestWork{}).Build()
	r := &Reconciler{Client: c, now: func() time.Time { return t0 }}
	ctx, key := context.Background(), types.NamespacedName{Namespace: ns, Name: "app"}
	_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
	require.NoError(t, err)
	_, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: key}) // settled: the work is there
	require.NoError(t, err)

	var m workv1alpha1.ManifestWorkReplicaSet
	require.NoError(t, c.Get(ctx, key, &m))
	require.Len(t, m.Status.Conditions, 3)
	m.Generation = 2 // a spec change that changes nothing else (the fake client does not count generations)
	require.NoError(t, c.Update(ctx, &m))
	_, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
	require.NoError(t, err)

	require.NoError(t, c.Get(ctx, key, &m))
	for _, cd := range m.Status.Conditions {
		assert.Equal(t, int64(2), cd.ObservedGeneration, "%s observes the new generation", cd.Type)
	}
}
