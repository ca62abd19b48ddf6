package registration

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
)

func claim(name, value string, labels ...string) clusterv1alpha1.ClusterClaim {
	c := clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterClaimSpec{Value: value}}
	if len(labels) > 0 {
		c.Labels = map[string]string{labels[0]: ""}
	}
	return c
}

func TestSelectClaims(t *testing.T) {
	var many []clusterv1alpha1.ClusterClaim
	for i := 25; i >= 1; i-- {
		many = append(many, claim(fmt.Sprintf("custom-%02d", i), "v"))
	}
	many = append(many, claim("platform.open-cluster-management.io", "AWS"), claim("id.k8s.io", "abc"))
	got := SelectClaims(many)
	assert.Len(t, got, 22, "2 reserved + 20 custom")
	assert.Equal(t, clusterv1.ManagedClusterClaim{Name: "id.k8s.io", Value: "abc"}, got[0], "reserved first, sorted")
	assert.Equal(t, "platform.open-cluster-management.io", got[1].Name)
	assert.Equal(t, "custom-01", got[2].Name, "custom sorted by name")
	assert.Equal(t, "custom-20", got[21].Name, "custom capped at 20")

	tests := []struct {
		name   string
		claims []clusterv1alpha1.ClusterClaim
		want   []clusterv1.ManagedClusterClaim
	}{
		{"none", nil, nil},
		{"spoke-only stays on the spoke", []clusterv1alpha1.ClusterClaim{claim("secret-ish", "x", SpokeOnlyLabel), claim("region", "eu")},
			[]clusterv1.ManagedClusterClaim{{Name: "region", Value: "eu"}}},
		{"spoke-only reserved claim stays too", []clusterv1alpha1.ClusterClaim{claim("id.k8s.io", "x", SpokeOnlyLabel)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, SelectClaims(tt.claims)) })
	}
}

func TestSumResources(t *testing.T) {
	node := func(cpu, mem, acpu, amem string) corev1.Node {
		return corev1.Node{Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(acpu), corev1.ResourceMemory: resource.MustParse(amem)},
		}}
	}
	capacity, allocatable := SumResources([]corev1.Node{node("4", "16Gi", "3500m", "15Gi"), node("2", "8Gi", "1500m", "7Gi")})
	assert.True(t, resource.MustParse("6").Equal(capacity[clusterv1.ResourceCPU]))
	assert.True(t, resource.MustParse("24Gi").Equal(capacity[clusterv1.ResourceMemory]))
	assert.True(t, resource.MustParse("5").Equal(allocatable[clusterv1.ResourceCPU]))
	assert.True(t, resource.MustParse("22Gi").Equal(allocatable[clusterv1.ResourceMemory]))

	capacity, _ = SumResources(nil)
	cpu := capacity[clusterv1.ResourceCPU]
	assert.True(t, cpu.IsZero(), "no nodes: zero, reported")
}
