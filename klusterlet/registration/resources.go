package registration

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// SumResources adds up the nodes' CPU and memory capacity and allocatable.
// With no nodes both are zero (reported, not omitted).
func SumResources(nodes []corev1.Node) (capacity, allocatable clusterv1.ResourceList) {
	capacity = clusterv1.ResourceList{clusterv1.ResourceCPU: resource.MustParse("0"), clusterv1.ResourceMemory: resource.MustParse("0")}
	allocatable = clusterv1.ResourceList{clusterv1.ResourceCPU: resource.MustParse("0"), clusterv1.ResourceMemory: resource.MustParse("0")}
	for _, n := range nodes {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			key := clusterv1.ResourceName(name)
			if q, ok := n.Status.Capacity[name]; ok {
				sum := capacity[key]
				sum.Add(q)
				capacity[key] = sum
			}
			if q, ok := n.Status.Allocatable[name]; ok {
				sum := allocatable[key]
				sum.Add(q)
				allocatable[key] = sum
			}
		}
	}
	return capacity, allocatable
}
