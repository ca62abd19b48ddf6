package deploy

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"flotilla.dev/flotilla/policy/compliance/apigroup"
	"flotilla.dev/flotilla/policy/compliance/web"
)

// allowAll is an Authorizer for building the group (never asked here).
type allowAll struct{ web.Authorizer }

// TestHubRoleHoldsTheReaderRole: the hub binds a reader ClusterRole of its
// aggregated group's resources to system:authenticated, and RBAC lets it
// write that role only if it holds every right in it (no escalate). The
// hub's ClusterRole must then hold get and list on every resource the group
// serves, or a deployed hub never registers its APIService.
func TestHubRoleHoldsTheReaderRole(t *testing.T) {
	g, err := apigroup.New(apigroup.Options{Reader: fake.NewClientBuilder().Build(), Access: allowAll{}})
	require.NoError(t, err)
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
	holds := func(resource, verb string) bool {
		for _, r := range rules {
			if slices.Contains(r.APIGroups, g.Name) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) && len(r.ResourceNames) == 0 {
				return true
			}
		}
		return false
	}
	for _, r := range g.Resources {
		for _, res := range []string{r.Name, r.Name + "/*"} {
			for _, verb := range []string{"get", "list"} {
				assert.True(t, holds(res, verb), "the hub's ClusterRole lacks %s %s.%s", verb, res, g.Name)
			}
		}
	}
}
