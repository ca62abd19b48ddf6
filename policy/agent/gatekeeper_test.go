package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

func obj(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestGatekeeperCompliance(t *testing.T) {
	tests := []struct {
		name, obj string
		state     policyv1.ComplianceState
		msg       string
		reported  bool
	}{
		{name: "template not yet processed", obj: `{apiVersion: templates.gatekeeper.sh/v1, kind: ConstraintTemplate, metadata: {name: t}}`},
		{name: "template created", obj: `{apiVersion: templates.gatekeeper.sh/v1, kind: ConstraintTemplate, metadata: {name: t}, status: {created: true}}`,
			state: policyv1.Compliant, msg: "Compliant; notification - ConstraintTemplate t was created successfully", reported: true},
		{name: "template that does not compile", obj: `{apiVersion: templates.gatekeeper.sh/v1, kind: ConstraintTemplate, metadata: {name: t},
 status: {created: false, byPod: [{id: a, errors: [{code: ingest_error, message: "rego_parse_error: x"}]}, {id: b, errors: [{code: ingest_error, message: "rego_parse_error: x"}]}]}}`,
			state: policyv1.NonCompliant, msg: "NonCompliant; violation - ConstraintTemplate t could not be created: rego_parse_error: x", reported: true},
		{name: "constraint not audited yet", obj: `{apiVersion: constraints.gatekeeper.sh/v1beta1, kind: K8sX, metadata: {name: c}, spec: {enforcementAction: warn}}`},
		{name: "constraint without violations", obj: `{apiVersion: constraints.gatekeeper.sh/v1beta1, kind: K8sX, metadata: {name: c}, spec: {enforcementAction: dryrun},
 status: {auditTimestamp: "2024-01-01T00:00:00Z", totalViolations: 0}}`,
			state: policyv1.Compliant, msg: "Compliant; notification - dryrun - the Gatekeeper constraint has not detected any active violations", reported: true},
		{name: "default action is deny", obj: `{apiVersion: constraints.gatekeeper.sh/v1beta1, kind: K8sX, metadata: {name: c}, status: {totalViolations: 0}}`,
			state: policyv1.Compliant, msg: "Compliant; notification - deny - the Gatekeeper constraint has not detected any active violations", reported: true},
		{name: "violations, namespaced and not", obj: `{apiVersion: constraints.gatekeeper.sh/v1beta1, kind: K8sX, metadata: {name: c}, spec: {enforcementAction: dryrun},
 status: {auditTimestamp: "2024-01-01T00:00:00Z", totalViolations: 2, violations: [
  {enforcementAction: dryrun, kind: Namespace, name: default, message: 'you must provide labels: {"gatekeeper"}'},
  {kind: Pod, namespace: web, name: p, message: m}]}}`,
			state: policyv1.NonCompliant, reported: true,
			msg: `NonCompliant; violation - dryrun - you must provide labels: {"gatekeeper"} (on Namespace default); dryrun - m (on Pod web/p)`},
		{name: "violations counted but not listed", obj: `{apiVersion: constraints.gatekeeper.sh/v1beta1, kind: K8sX, metadata: {name: c}, status: {totalViolations: 3}}`,
			state: policyv1.NonCompliant, msg: "NonCompliant; violation - deny - 3 violations", reported: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state, msg, ok := GatekeeperCompliance(obj(t, tc.obj))
			assert.Equal(t, tc.reported, ok)
			assert.Equal(t, tc.state, state)
			assert.Equal(t, tc.msg, msg)
		})
	}
}

func TestGatekeeperObject(t *testing.T) {
	constraint := `{apiVersion: constraints.gatekeeper.sh/v1beta1, kind: K8sX, metadata: {name: c, namespace: oops, labels: {a: b}},
 spec: {enforcementAction: dryrun}, status: {totalViolations: 1}}`
	tests := []struct {
		name        string
		remediation policyv1.RemediationAction
		action      string
	}{
		{name: "inform is warn", remediation: "inform", action: "warn"},
		{name: "Enforce is deny", remediation: "Enforce", action: "deny"},
		{name: "unset keeps the constraint's", remediation: "", action: "dryrun"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := GatekeeperObject(obj(t, constraint), "ns.p", tc.remediation)
			a, _, _ := unstructured.NestedString(got.Object, "spec", "enforcementAction")
			assert.Equal(t, tc.action, a)
			assert.Equal(t, map[string]string{"a": "b", PolicyLabel: "ns.p"}, got.GetLabels())
			assert.Empty(t, got.GetNamespace(), "cluster-scoped")
			assert.NotContains(t, got.Object, "status")
		})
	}
	tpl := GatekeeperObject(obj(t, `{apiVersion: templates.gatekeeper.sh/v1, kind: ConstraintTemplate, metadata: {name: t}, spec: {x: 1}}`), "ns.p", "enforce")
	_, has, _ := unstructured.NestedString(tpl.Object, "spec", "enforcementAction")
	assert.False(t, has, "templates have no enforcementAction")
	assert.True(t, IsGatekeeper(tpl))
	assert.False(t, IsGatekeeper(obj(t, `{apiVersion: policy.open-cluster-management.io/v1, kind: ConfigurationPolicy}`)))
	assert.True(t, GatekeeperInstalled(obj(t, `{metadata: {name: constrainttemplates.templates.gatekeeper.sh}}`)))
	assert.False(t, GatekeeperInstalled(obj(t, `{metadata: {name: x, labels: {app.kubernetes.io/managed-by: flotilla-policy}}}`)))
	assert.False(t, GatekeeperInstalled(nil))
}
