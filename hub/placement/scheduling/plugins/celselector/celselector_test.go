package celselector

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/hub/placement/scheduling/framework"
	st "flotilla.dev/flotilla/hub/placement/scheduling/schedtest"
)

func TestFilter(t *testing.T) {
	c := framework.NewClusterInfo(st.Cluster("c1").Label("env", "prod").Claim("region", "eu").Allocatable("8", "16Gi").Obj(), nil)
	tests := []struct {
		name  string
		exprs []string
		want  bool
	}{
		{"no expressions", nil, true},
		{"label", []string{`managedCluster.metadata.labels["env"] == "prod"`}, true},
		{"ANDed", []string{`managedCluster.metadata.labels["env"] == "prod"`, `managedCluster.metadata.name == "c2"`}, false},
		{"claims", []string{`managedCluster.status.clusterClaims.exists(c, c.name == "region" && c.value == "eu")`}, true},
		{"string extension", []string{`managedCluster.metadata.name.startsWith("c")`}, true},
		{"missing field fails the cluster, not the scheduler", []string{`managedCluster.metadata.labels["absent"] == "x"`}, false},
		{"non-bool at runtime", []string{`managedCluster.metadata.labels["env"]`}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(clusterv1beta1.ClusterSelector{CelSelector: clusterv1beta1.ClusterCelSelector{CelExpressions: tc.exprs}})
			require.NoError(t, err)
			assert.Equal(t, tc.want, p.Filter(c).IsSuccess())
		})
	}
}

func TestCompileErrors(t *testing.T) {
	for expr, want := range map[string]string{
		`managedCluster.metadata.labels[`: "does not compile",
		`1 + 1`:                           "must evaluate to a bool",
		`unknownVar == 1`:                 "does not compile",
	} {
		_, err := New(clusterv1beta1.ClusterSelector{CelSelector: clusterv1beta1.ClusterCelSelector{CelExpressions: []string{"true", expr}}})
		require.Error(t, err, expr)
		assert.Contains(t, err.Error(), want)
		assert.Contains(t, err.Error(), "celExpressions[1]")
	}
}
