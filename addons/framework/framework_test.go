package framework

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

type named struct {
	name string
	opts Options
}

func (n named) Name() string     { return n.name }
func (n named) Options() Options { return n.opts }
func (named) Manifests(*clusterv1.ManagedCluster, *addonv1alpha1.ManagedClusterAddOn) ([]runtime.Object, error) {
	return nil, nil
}

func TestRegistryRefusals(t *testing.T) {
	for _, tc := range []struct {
		addon Addon
		err   string
	}{
		{named{name: "Bad_Name"}, "not a DNS label"},
		{named{name: "probe", opts: Options{Health: Health{Mode: HealthWorkField}}}, "needs a Probe with a Check"},
	} {
		_, err := NewRegistry(tc.addon)
		assert.ErrorContains(t, err, tc.err)
	}
	r, err := NewRegistry(named{name: "b"}, named{name: "a"})
	assert.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, r.Names())
	_, ok := r.Get("c")
	assert.False(t, ok)
	assert.Equal(t, HealthLease, Options{}.HealthMode())
	assert.Equal(t, "a-agent", Registration{}.DefaultAgentName("a"))
}
