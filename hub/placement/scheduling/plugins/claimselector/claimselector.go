// Package claimselector is the predicate plugin for requiredClusterSelector.claimSelector:
// a label-selector-style query over the cluster's status.clusterClaims.
package claimselector

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
)

// Name is the plugin's registry name.
const Name = "ClaimSelector"

// Plugin keeps clusters whose claims satisfy every match expression.
type Plugin struct{ selector labels.Selector }

var _ framework.FilterPlugin = &Plugin{}

// New builds the plugin; no expressions match every cluster.
func New(sel clusterv1beta1.ClusterSelector) (framework.FilterPlugin, error) {
	s, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: sel.ClaimSelector.MatchExpressions})
	if err != nil {
		return nil, fmt.Errorf("claimSelector: %w", err)
	}
	return &Plugin{selector: s}, nil
}

func (p *Plugin) Name() string { return Name }

func (p *Plugin) Filter(c *framework.ClusterInfo) *framework.Status {
	if p.selector.Matches(labels.Set(c.Claims)) {
		return nil
	}
	return framework.NewStatus(framework.Unschedulable, "cluster claims do not match %s", p.selector)
}
