package propagator_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/ops"
)

// The CLI's library on a real hub: create a policy-collection-style policy
// bound to a placement, see it propagate, list it and describe it.
func TestOpsCreateListDescribe(t *testing.T) {
	s := newScope(t, "cli")
	s.clusters("prod", "cli-1", "cli-2")
	s.placement("all", "prod")
	file := filepath.Join(t.TempDir(), "ns.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata:
  name: policy-namespace-prod
spec:
  remediationAction: inform
  severity: low
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: prod}}
`), 0o600))
	out, err := ops.Create(s.ctx, hub, ops.CreateOptions{Name: "policy-namespace", Namespace: s.ns, File: file,
		Standards: []string{"NIST SP 800-53"}, Categories: []string{"CM Configuration Management"},
		Controls: []string{"CM-2 Baseline Configuration"}, Placement: "all"})
	require.NoError(t, err)
	assert.Equal(t, "binding-policy-namespace", out.Binding.Name)
	s.eventuallyReplicas("policy-namespace", "cli-1", "cli-2")

	_, err = ops.Create(s.ctx, hub, ops.CreateOptions{Name: "policy-namespace", Namespace: s.ns, File: file})
	assert.ErrorContains(t, err, "policy cli/policy-namespace already exists")

	s.report("policy-namespace", "cli-2", policyv1.NonCompliant, "violation - namespaces [prod] not found")
	s.report("policy-namespace", "cli-1", policyv1.Compliant, "notification - namespaces [prod] found as specified")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		list, err := ops.List(s.ctx, hub, s.ns)
		if !assert.NoError(c, err) || !assert.Len(c, list, 1, "replicas are not listed") {
			return
		}
		assert.Equal(c, policyv1.NonCompliant, list[0].Status.ComplianceState)
		d, err := ops.Describe(s.ctx, hub, s.ns, "policy-namespace")
		if assert.NoError(c, err) && assert.Len(c, d.Clusters, 2) {
			assert.Equal(c, "cli-2", d.Clusters[1].Cluster)
			if assert.Len(c, d.Clusters[1].Templates, 1) {
				assert.Equal(c, "NonCompliant; violation - namespaces [prod] not found", d.Clusters[1].Templates[0].LastMessage)
			}
		}
	}, timeout, tick)
	_, err = ops.Describe(s.ctx, hub, s.ns, "nope")
	assert.ErrorContains(t, err, `policy cli/nope: policies.policy.open-cluster-management.io "nope" not found`)
}
