package webhook

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

func TestAgentChange(t *testing.T) {
	base := func() *clusterv1.ManagedCluster {
		return &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"a": "b"}, Finalizers: []string{"f"}},
			Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true, LeaseDurationSeconds: 60},
		}
	}
	tests := []struct {
		name   string
		mutate func(*clusterv1.ManagedCluster)
		want   string
	}{
		{"no change", func(*clusterv1.ManagedCluster) {}, ""},
		{"client configs", func(c *clusterv1.ManagedCluster) {
			c.Spec.ManagedClusterClientConfigs = []clusterv1.ClientConfig{{URL: "https://c1:6443"}}
		}, ""},
		{"label itself into a placement", func(c *clusterv1.ManagedCluster) { c.Labels["env"] = "prod" }, "metadata.labels"},
		{"annotation", func(c *clusterv1.ManagedCluster) { c.Annotations = map[string]string{"x": "y"} }, "metadata.annotations"},
		{"drop the hub's finalizer", func(c *clusterv1.ManagedCluster) { c.Finalizers = nil }, "metadata.finalizers"},
		{"remove its taints", func(c *clusterv1.ManagedCluster) {
			c.Spec.Taints = []clusterv1.Taint{{Key: "x", Effect: clusterv1.TaintEffectNoSelect}}
		}, "spec (other than managedClusterClientConfigs)"},
		{"stretch its lease", func(c *clusterv1.ManagedCluster) { c.Spec.LeaseDurationSeconds = 3600 }, "spec (other than managedClusterClientConfigs)"},
		{"un-accept itself", func(c *clusterv1.ManagedCluster) { c.Spec.HubAcceptsClient = false }, "spec (other than managedClusterClientConfigs)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := base()
			tt.mutate(cur)
			assert.Equal(t, tt.want, agentChange(base(), cur))
		})
	}
}
