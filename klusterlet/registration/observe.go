package registration

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// facts are what the agent observed on the managed cluster.
type facts struct {
	available             metav1.Condition
	version               string
	capacity, allocatable clusterv1.ResourceList
	claims                []clusterv1.ManagedClusterClaim
	claimsKnown           bool
}

// observe probes the managed cluster. Parts it cannot read stay unset and keep
// their previous values on the hub.
func (a *Agent) observe(ctx context.Context) facts {
	var f facts
	f.available = metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue,
		Reason: ReasonAvailable, Message: "Managed cluster is available"}
	rc := a.spoke.Discovery().RESTClient()
	if _, err := rc.Get().AbsPath("/livez").DoRaw(ctx); err != nil {
		if _, err2 := rc.Get().AbsPath("/healthz").DoRaw(ctx); err2 != nil {
			f.available.Status, f.available.Reason = metav1.ConditionFalse, ReasonAPIServerUnavailable
			f.available.Message = "The managed cluster's kube-apiserver is not healthy: " + err.Error()
			return f
		}
	}
	if v, err := a.spoke.Discovery().ServerVersion(); err == nil {
		f.version = v.GitVersion
	}
	if nodes, err := a.spoke.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		f.capacity, f.allocatable = SumResources(nodes.Items)
	} else {
		a.log.Error(err, "list nodes on the managed cluster")
	}
	list, err := a.spokeClusters.ClusterV1alpha1().ClusterClaims().List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
		f.claims, f.claimsKnown = SelectClaims(list.Items), true
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		f.claimsKnown = true // no ClusterClaim CRD: no claims
	default:
		a.log.Error(err, "list ClusterClaims on the managed cluster")
	}
	return f
}
