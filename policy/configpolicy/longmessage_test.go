package configpolicy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/conditions"
)

// An enforce refused with an apiserver error quoting a 100,000-character key
// still ends in a status: the message is cut and marked, and it stays put
// (one history entry, no rewrite on every evaluation).
func TestHugeErrorMessageIsCutAndStable(t *testing.T) {
	ns := namespace(t, "huge-message", nil)
	key := strings.Repeat("k", 100000) + "!"
	// Built in Go: YAML caps implicit keys at 1024 characters.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.open-cluster-management.io/v1", "kind": "ConfigurationPolicy",
		"metadata": map[string]any{"name": "huge"},
		"spec": map[string]any{"remediationAction": "enforce", "evaluationInterval": map[string]any{"noncompliant": "1s"},
			"object-templates": []any{map[string]any{"complianceType": "musthave",
				"objectDefinition": map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": "c", "namespace": ns}, "data": map[string]any{key: "1"}}}}}}}
	_, err := dyn.Resource(policiesGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	require.NoError(t, err)
	var p *policyv1.ConfigurationPolicy
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		p = getPolicy(t, ns, "huge")
		assert.Equal(c, policyv1.NonCompliant, p.Status.ComplianceState)
		require.NotEmpty(c, p.Status.CompliancyDetails)
		msg := p.Status.CompliancyDetails[0].Conditions[0].Message
		assert.LessOrEqual(c, len(msg), conditions.MaxMessage)
		assert.Contains(c, msg, "is missing, and cannot be created")
		assert.Contains(c, msg, "[truncated: ")
	}, 60*time.Second, 50*time.Millisecond)
	first := p.Status.CompliancyDetails[0].Conditions[0].LastTransitionTime
	// Over several evaluations: the same message, transition time and history.
	require.Never(t, func() bool {
		p := getPolicy(t, ns, "huge")
		return len(p.Status.History) != 1 || !p.Status.CompliancyDetails[0].Conditions[0].LastTransitionTime.Equal(&first)
	}, 4*time.Second, 200*time.Millisecond, "the cut message must not count as a new message on each evaluation")
}
