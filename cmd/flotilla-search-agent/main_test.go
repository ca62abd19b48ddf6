package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/addons/search"
	"flotilla.dev/flotilla/internal/image"
	"flotilla.dev/flotilla/search/agent"
)

// TestTakesTheAddonsCommandLine: the search addon's Deployment runs this
// binary with a flotilla command line; every flag of it must parse here.
func TestTakesTheAddonsCommandLine(t *testing.T) {
	objs, err := search.Addon{}.Manifests(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}},
		&addonv1alpha1.ManagedClusterAddOn{Status: addonv1alpha1.ManagedClusterAddOnStatus{Namespace: "agents"}})
	require.NoError(t, err)
	var c []string
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			ctr := d.Spec.Template.Spec.Containers[0]
			assert.Equal(t, []string{"/" + image.SearchAgentBinary}, ctr.Command, "the Pod runs the slim binary")
			c = ctr.Args
		}
	}
	require.NotEmpty(t, c)
	root := newRootCommand()
	cmd, rest, err := root.Find(c)
	require.NoError(t, err)
	assert.Equal(t, "search", cmd.Name())
	require.NoError(t, cmd.ParseFlags(rest))
	for flag, want := range map[string]string{"cluster-name": "cluster1", "namespace": "agents", "resources": strings.Join(agent.DefaultResources, ",")} {
		got, err := cmd.Flags().GetString(flag)
		require.NoError(t, err)
		assert.Equal(t, want, got, flag)
	}
}

// TestRefusesBadFlags: a wrong flag is an error, not a start.
func TestRefusesBadFlags(t *testing.T) {
	root := newRootCommand()
	root.SetArgs([]string{"addon-agent", "search", "--no-such-flag"})
	assert.ErrorContains(t, root.Execute(), "no-such-flag")
}
