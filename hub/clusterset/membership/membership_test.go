package membership

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

func cluster(name string, labels map[string]string) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestMembers(t *testing.T) {
	fleet := []*clusterv1.ManagedCluster{
		cluster("c1", map[string]string{clusterv1beta2.ClusterSetLabel: "default", "env": "prod"}),
		cluster("c2", map[string]string{clusterv1beta2.ClusterSetLabel: "blue", "env": "dev"}),
		cluster("c3", nil),
	}
	set := func(name string, st clusterv1beta2.SelectorType, sel *metav1.LabelSelector) *clusterv1beta2.ManagedClusterSet {
		return &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: st, LabelSelector: sel}}}
	}
	tests := []struct {
		name string
		set  *clusterv1beta2.ManagedClusterSet
		want []string
	}{
		{"exclusive label", set("blue", clusterv1beta2.ExclusiveClusterSetLabel, nil), []string{"c2"}},
		{"unset type means exclusive label", set("default", "", nil), []string{"c1"}},
		{"global: empty label selector", set("global", clusterv1beta2.LabelSelector, &metav1.LabelSelector{}), []string{"c1", "c2", "c3"}},
		{"label selector", set("prod", clusterv1beta2.LabelSelector, &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}), []string{"c1"}},
		{"nobody", set("empty", clusterv1beta2.ExclusiveClusterSetLabel, nil), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Members(tc.set, fleet)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := Members(set("x", "Magic", nil), fleet)
	assert.ErrorContains(t, err, `selectorType "Magic"`)
}
