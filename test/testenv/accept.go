package testenv

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MarkAccepted stands in for the hub's acceptance controller in tests that
// run no hub: it sets spec.hubAcceptsClient and the condition
// HubAcceptedManagedCluster=True on each named ManagedCluster, as the hub does
// once it has granted an accepted cluster its rights. Placement, the
// governance propagator and the ManifestWorkReplicaSet controller only act on
// clusters accepted this way (ocm.Accepted).
func MarkAccepted(ctx context.Context, c client.Client, names ...string) error {
	for _, name := range names {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var mc clusterv1.ManagedCluster
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &mc); err != nil {
				return err
			}
			if !mc.Spec.HubAcceptsClient {
				mc.Spec.HubAcceptsClient = true
				if err := c.Update(ctx, &mc); err != nil {
					return err
				}
			}
			SetAccepted(&mc)
			return c.Status().Update(ctx, &mc)
		})
		if err != nil {
			return fmt.Errorf("mark ManagedCluster %s accepted: %w", name, err)
		}
	}
	return nil
}

// SetAccepted sets, on mc in memory, what the hub's acceptance controller
// sets on an accepted cluster's status (HubAcceptedManagedCluster=True);
// write it with the status subresource, after creating mc with
// spec.hubAcceptsClient=true. For fleets of fake clusters, one write each.
func SetAccepted(mc *clusterv1.ManagedCluster) {
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionHubAccepted,
		Status: metav1.ConditionTrue, Reason: "HubClusterAdminAccepted", Message: "accepted by the test (testenv)"})
}
