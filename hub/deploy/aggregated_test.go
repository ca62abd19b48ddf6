package deploy

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	searchv1alpha1 "flotilla.dev/flotilla/api/search/v1alpha1"
	"flotilla.dev/flotilla/internal/aggregated"
	"flotilla.dev/flotilla/policy/compliance/apigroup"
)

// TestHubRoleHoldsTheReaderRole: the hub binds a reader ClusterRole of each
// aggregated group (compliance.flotilla.dev, search.flotilla.dev) to
// system:authenticated, and RBAC lets it write that role only if it holds
// every right in it (no escalate). The hub's ClusterRole must then hold
// every rule of aggregated.ReaderRules, or a deployed hub never registers
// its APIServices.
func TestHubRoleHoldsTheReaderRole(t *testing.T) {
	objs, err := Render(Options{Image: "ghcr.io/flotilla-dev/flotilla:v1"})
	require.NoError(t, err)
	var rules []rbacv1.PolicyRule
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		var cr rbacv1.ClusterRole
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &cr))
		rules = append(rules, cr.Rules...)
	}
	holds := func(group, resource, verb string) bool {
		for _, r := range rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) && len(r.ResourceNames) == 0 {
				return true
			}
		}
		return false
	}
	for _, g := range []string{apigroup.Group, searchv1alpha1.GroupName} {
		for _, rule := range aggregated.ReaderRules(aggregated.Group{Name: g}) {
			for _, res := range rule.Resources {
				for _, verb := range rule.Verbs {
					assert.True(t, holds(g, res, verb), "the hub's ClusterRole lacks %s %s.%s", verb, res, g)
				}
			}
		}
	}
}
