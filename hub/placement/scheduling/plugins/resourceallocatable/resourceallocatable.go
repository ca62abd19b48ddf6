// Package resourceallocatable holds the ResourceAllocatableCPU and
// ResourceAllocatableMemory prioritizers: clusters with more allocatable CPU (or
// memory) score higher, scaled linearly from -100 (least) to 100 (most).
package resourceallocatable

import (
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
)

// Built-in prioritizer names.
const (
	CPUName    = "ResourceAllocatableCPU"
	MemoryName = "ResourceAllocatableMemory"
)

// Plugin ranks by one allocatable resource.
type Plugin struct {
	name     string
	resource clusterv1.ResourceName
}

var _ framework.ScorePlugin = &Plugin{}

// NewCPU builds the CPU prioritizer.
func NewCPU(*framework.Handle, clusterv1beta1.ScoreCoordinate) (framework.ScorePlugin, error) {
	return &Plugin{name: CPUName, resource: clusterv1.ResourceCPU}, nil
}

// NewMemory builds the memory prioritizer.
func NewMemory(*framework.Handle, clusterv1beta1.ScoreCoordinate) (framework.ScorePlugin, error) {
	return &Plugin{name: MemoryName, resource: clusterv1.ResourceMemory}, nil
}

func (p *Plugin) Name() string { return p.name }

// Score is allocatable CPU in millicores or memory in bytes. Clusters that report
// nothing score 0.
func (p *Plugin) Score(c *framework.ClusterInfo) (int64, *framework.Status) {
	q, ok := c.Cluster.Status.Allocatable[p.resource]
	if !ok {
		return 0, nil
	}
	if p.resource == clusterv1.ResourceCPU {
		return q.MilliValue(), nil
	}
	return q.Value(), nil
}

func (p *Plugin) NormalizeScore(scores []int64) *framework.Status {
	framework.ScaleLinear(scores)
	return nil
}
