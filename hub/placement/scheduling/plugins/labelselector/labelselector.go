// Package labelselector is the predicate plugin for requiredClusterSelector.labelSelector.
package labelselector

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
)

// Name is the plugin's registry name.
const Name = "LabelSelector"

// Plugin keeps clusters whose labels match the predicate's labelSelector.
type Plugin struct{ selector labels.Selector }

var _ framework.FilterPlugin = &Plugin{}

// New builds the plugin; an empty selector matches every cluster.
func New(sel clusterv1beta1.ClusterSelector) (framework.FilterPlugin, error) {
	s, err := metav1.LabelSelectorAsSelector(&sel.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("labelSelector: %w", err)
	}
	return &Plugin{selector: s}, nil
}

func (p *Plugin) Name() string { return Name }

func (p *Plugin) Filter(c *framework.ClusterInfo) *framework.Status {
	if p.selector.Matches(labels.Set(c.Cluster.Labels)) {
		return nil
	}
	return framework.NewStatus(framework.Unschedulable, "labels do not match %s", p.selector)
}
