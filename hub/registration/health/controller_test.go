package health

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestStaleCacheLeaseIsReadAgain: the cache (a watch that stopped delivering)
// holds an old lease while the apiserver holds a fresh one. The cluster stays
// Available, and the reconciler comes back when the stored lease would expire;
// with no reader, or when the stored lease is as old, it is made Unknown.
func TestStaleCacheLeaseIsReadAgain(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, clusterv1.Install(scheme))
	now := time.Date(2026, 11, 24, 21, 50, 0, 0, time.UTC)
	lease := func(renewed time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: LeaseName},
			Spec:       coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: renewed}},
		}
	}
	cluster := func() *clusterv1.ManagedCluster {
		return &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster1"},
			Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true, LeaseDurationSeconds: 5},
			Status: clusterv1.ManagedClusterStatus{Conditions: []metav1.Condition{
				{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
				{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue, Reason: "Available", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
			}},
		}
	}
	cached := now.Add(-6 * time.Minute) // far past 5 x 5 s
	for _, tc := range []struct {
		name        string
		stored      *time.Time // nil: no reader
		gone        bool       // a reader that has no lease
		wantUnknown bool
		wantRequeue time.Duration
	}{
		{name: "the stored lease is gone", gone: true, wantUnknown: true},
		{name: "the stored lease is fresh", stored: ptr(now.Add(-2 * time.Second)), wantRequeue: 23*time.Second + 100*time.Millisecond},
		{name: "the stored lease is as old", stored: &cached, wantUnknown: true},
		{name: "no reader", wantUnknown: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&clusterv1.ManagedCluster{}).
				WithObjects(cluster(), lease(cached)).Build()
			r := &Reconciler{Client: c, GraceMultiplier: DefaultGraceMultiplier, Now: func() time.Time { return now }}
			if tc.gone {
				r.Reader = fake.NewClientBuilder().WithScheme(scheme).Build()
			}
			if tc.stored != nil {
				r.Reader = fake.NewClientBuilder().WithScheme(scheme).WithObjects(lease(*tc.stored)).Build()
			}
			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "cluster1"}})
			require.NoError(t, err)
			got := &clusterv1.ManagedCluster{}
			require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "cluster1"}, got))
			avail := meta.FindStatusCondition(got.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
			require.NotNil(t, avail)
			if tc.wantUnknown {
				assert.Equal(t, metav1.ConditionUnknown, avail.Status)
				assert.NotEmpty(t, got.Spec.Taints, "an Unknown cluster is tainted")
				return
			}
			assert.Equal(t, metav1.ConditionTrue, avail.Status)
			assert.Empty(t, got.Spec.Taints)
			assert.Equal(t, tc.wantRequeue, res.RequeueAfter)
		})
	}
}

func ptr[T any](v T) *T { return &v }
