package sets

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEmptyCondition(t *testing.T) {
	tests := []struct {
		n       int
		err     error
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{0, nil, metav1.ConditionTrue, ReasonNoClusterMatched, "No ManagedCluster selected"},
		{1, nil, metav1.ConditionFalse, ReasonClustersSelected, "1 ManagedCluster selected"},
		{7, nil, metav1.ConditionFalse, ReasonClustersSelected, "7 ManagedClusters selected"},
		{0, errors.New(`ManagedClusterSet "x": bad selector`), metav1.ConditionTrue, "InvalidClusterSelector",
			`ManagedClusterSet "x": bad selector; the set selects no cluster until it is fixed`},
	}
	for _, tc := range tests {
		c := EmptyCondition(tc.n, tc.err)
		assert.Equal(t, "ClusterSetEmpty", c.Type)
		assert.Equal(t, tc.status, c.Status)
		assert.Equal(t, tc.reason, c.Reason)
		assert.Equal(t, tc.message, c.Message)
	}
}
