package configpolicy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
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

// A policy whose spec is large and whose related objects carry a large diff:
// written whole, the object would pass what etcd takes (1.5 MiB) and no
// status would ever be written. The engine leaves the diff out, writes the
// status, and says so on it and in a Warning Event.
func TestStatusStaysWithinTheObjectLimit(t *testing.T) {
	ns := namespace(t, "huge-status", nil)
	filler := strings.Repeat("f", 950_000)
	want, have := strings.Repeat("a", 220_000), strings.Repeat("b", 220_000)
	for name, v := range map[string]string{"filler": filler, "c": have} {
		_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": v}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	cm := func(name, v string) map[string]any {
		return map[string]any{"complianceType": "musthave", "recordDiff": "InStatus",
			"objectDefinition": map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"v": v}}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.open-cluster-management.io/v1", "kind": "ConfigurationPolicy",
		"metadata": map[string]any{"name": "big"},
		"spec": map[string]any{"remediationAction": "inform", "evaluationInterval": map[string]any{"noncompliant": "1s"},
			"object-templates": []any{cm("c", want), cm("filler", filler)}}}}
	_, err := dyn.Resource(policiesGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	require.NoError(t, err)

	var p *policyv1.ConfigurationPolicy
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		p = getPolicy(t, ns, "big")
		assert.Equal(c, policyv1.NonCompliant, p.Status.ComplianceState)
		require.Len(c, p.Status.CompliancyDetails, 2)
		conds := p.Status.CompliancyDetails[0].Conditions
		require.Len(c, conds, 2)
		assert.Equal(c, "RelatedObjectsTruncated", conds[1].Type)
		assert.Equal(c, "the status lists 2 of 2 related objects, 1 without their diff, to stay within 512 KiB; the policy's messages still name every object", conds[1].Message)
		assert.Len(c, p.Status.CompliancyDetails[1].Conditions, 1, "the filler lost nothing")
	}, 60*time.Second, 50*time.Millisecond)
	for _, ro := range p.Status.RelatedObjects {
		if ro.Properties != nil {
			assert.Empty(t, ro.Properties.Diff, ro.Object.Metadata.Name)
		}
	}
	// Evaluated every second, the shrunk status is the same each time: it is
	// not written again.
	rv := p.ResourceVersion
	require.Never(t, func() bool { return getPolicy(t, ns, "big").ResourceVersion != rv },
		4*time.Second, 200*time.Millisecond, "the same shrunk status must not be rewritten on each evaluation")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var found bool
		for _, e := range events(t, ns, "big") {
			found = found || (e.Reason == "RelatedObjectsTruncated" && e.Type == corev1.EventTypeWarning)
		}
		assert.True(c, found)
	}, 30*time.Second, 50*time.Millisecond)
}
