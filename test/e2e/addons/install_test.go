package addons_test

import (
	"context"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func placedOn(t *testing.T) []*addonv1alpha1.ManagedClusterAddOn {
	var list addonv1alpha1.ManagedClusterAddOnList
	require.NoError(t, hubCli.List(context.Background(), &list))
	var out []*addonv1alpha1.ManagedClusterAddOn
	for i := range list.Items {
		if list.Items[i].Name == "placed" && list.Items[i].DeletionTimestamp == nil {
			out = append(out, &list.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp) })
	return out
}

func setStrategy(t *testing.T, s addonv1alpha1.InstallStrategy) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cma addonv1alpha1.ClusterManagementAddOn
		if err := hubCli.Get(context.Background(), client.ObjectKey{Name: "placed"}, &cma); err != nil {
			return err
		}
		cma.Spec.InstallStrategy = s
		return hubCli.Update(context.Background(), &cma)
	}))
}

// TestPlacementsInstallStrategy: a ClusterManagementAddOn with the Placements
// strategy installs on the clusters its Placement decides, one at a time under
// Progressive maxConcurrency 1, and removes what it installed from a cluster
// the placement drops.
func TestPlacementsInstallStrategy(t *testing.T) {
	ctx := context.Background()
	ns := "addon-placement"
	require.NoError(t, hubCli.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, hubCli.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "global", Namespace: ns},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"}}))
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: ns}, Spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{"global"}}}
	require.NoError(t, hubCli.Create(ctx, p))
	t.Cleanup(func() {
		setStrategy(t, addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual})
		disable(t, "cluster1", "placed")
		disable(t, "cluster2", "placed")
	})

	setStrategy(t, addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{{
		PlacementRef: addonv1alpha1.PlacementRef{Namespace: ns, Name: "all"},
		RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive,
			Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intstr.FromInt32(1)}},
	}}})
	require.Eventually(t, func() bool { return len(placedOn(t)) == 2 }, timeout, tick, "installed on both clusters")
	for _, c := range []string{"cluster1", "cluster2"} {
		eventuallyCondition(t, c, "placed", addonv1alpha1.ManagedClusterAddOnConditionAvailable, metav1.ConditionTrue)
	}
	both := placedOn(t)
	first := meta.FindStatusCondition(both[0].Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
	require.NotNil(t, first)
	assert.False(t, both[1].CreationTimestamp.Time.Before(first.LastTransitionTime.Time.Truncate(1e9)),
		"the second cluster got the addon (%s) only after the first became available (%s)", both[1].CreationTimestamp, first.LastTransitionTime)
	for _, m := range both {
		assert.Equal(t, "ClusterManagementAddOn", metav1.GetControllerOf(m).Kind)
	}
	require.Eventually(t, func() bool {
		var cma addonv1alpha1.ClusterManagementAddOn
		if hubCli.Get(ctx, client.ObjectKey{Name: "placed"}, &cma) != nil || len(cma.Status.InstallProgressions) != 1 {
			return false
		}

		c := meta.FindStatusCondition(cma.Status.InstallProgressions[0].Conditions, "Progressing")
		return c != nil && c.Reason == addonv1alpha1.ProgressingReasonCompleted
	}, timeout, tick, "installProgressions reports Completed")

	// The placement now decides one cluster: the other loses the addon.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := hubCli.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Spec.NumberOfClusters = ptr.To[int32](1)
		return hubCli.Update(ctx, p)
	}))
	require.Eventually(t, func() bool { return len(placedOn(t)) == 1 }, timeout, tick, "removed from the cluster the placement dropped")
}
