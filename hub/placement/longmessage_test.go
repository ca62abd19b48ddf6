package placement_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"flotilla.dev/flotilla/internal/conditions"
)

// A 100,000-character CEL expression makes messages that quote it; the
// Placement still gets a status, its messages cut to fit.
func TestHugeCELExpressionStillGetsAStatus(t *testing.T) {
	s := newScope(t, "huge-cel")
	s.cluster("huge-cel-1", nil)
	expr := "managedCluster.metadata.name == '" + strings.Repeat("x", 100000) + "' &&" // a syntax error quoting it all
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: s.ns}, Spec: clusterv1beta1.PlacementSpec{
		Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
			CelSelector: clusterv1beta1.ClusterCelSelector{CelExpressions: []string{expr}}}}}}}
	err := hub.Create(s.ctx, p.DeepCopy())
	require.Error(t, err, "the webhook refuses it")
	assert.Less(t, len(err.Error()), 4096, "its refusal is cut too")
	assert.Contains(t, err.Error(), "[truncated: 1024 of ")
	plantPastWebhook(t, s, p) // stored before the webhook existed
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		p := s.getPlacement("p")
		require.NotEmpty(c, p.Status.Conditions, "the Placement has a status")
		cut := false
		for _, cond := range p.Status.Conditions {
			assert.LessOrEqual(c, len(cond.Message), conditions.MaxMessage)
			cut = cut || strings.Contains(cond.Message, "[truncated: ")
		}
		assert.True(c, cut, "a message says it was cut: %+v", p.Status.Conditions)
	}, timeout, tick)
}
