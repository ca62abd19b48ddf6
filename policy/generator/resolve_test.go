package generator

import (
	"testing"

	"github.com/stretchr/testify/require"
)

const head = "apiVersion: policy.open-cluster-management.io/v1\nkind: PolicyGenerator\nmetadata:\n  name: t\n"

// TestBadConfigs: every refused configuration is refused at Parse or
// Resolve with a message that names the file and the field.
func TestBadConfigs(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown field", head + "policyDefaults:\n  namespace: p\n  remediation: enforce\npolicies: []\n", `unknown field "remediation" in policyDefaults`},
		{"typo in a manifest", head + "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  manifests:\n  - paht: x.yaml\n", `line 10: unknown field "paht" in a manifests entry`},
		{"placement rule", head + "policyDefaults:\n  namespace: p\n  placement:\n    placementRulePath: r.yaml\npolicies: []\n", "use placementPath with a Placement"},
		{"wrong kind", "apiVersion: policy.open-cluster-management.io/v1\nkind: Policy\n", `want policy.open-cluster-management.io/v1/PolicyGenerator`},
		{"not yaml", head + "policies: [", "invalid PolicyGenerator"},
		{"no policies", head + "policyDefaults:\n  namespace: p\n", "policies is empty"},
		{"no namespace", head + "policies:\n- name: a\n  manifests:\n  - path: x.yaml\n", "policyDefaults.namespace is empty"},
		{"policy without name", head + "policyDefaults:\n  namespace: p\npolicies:\n- manifests:\n  - path: x.yaml\n", "policies[0].name is empty"},
		{"bad policy name", head + "policyDefaults:\n  namespace: p\npolicies:\n- name: Bad_Name\n  manifests:\n  - path: x.yaml\n", `policies[0] (Bad_Name): name "Bad_Name" is not a valid object name`},
		{"duplicate policy", head + "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  manifests:\n  - path: x.yaml\n- name: a\n  manifests:\n  - path: x.yaml\n", `a second policy with the name "a"`},
		{"name too long", head + "policyDefaults:\n  namespace: a-rather-long-namespace-name\npolicies:\n- name: and-a-rather-long-policy-name-too-for-sure\n  manifests:\n  - path: x.yaml\n", "longer than 63 characters"},
		{"no manifests", head + "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n", "policies[0] (a).manifests is empty"},
		{"manifest without path", head + "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  manifests:\n  - name: x\n", "policies[0] (a).manifests[0].path is empty"},
		{"bad remediation", head + "policyDefaults:\n  namespace: p\n  remediationAction: fix\npolicies:\n- name: a\n  manifests:\n  - path: x.yaml\n", `policyDefaults.remediationAction is "fix"`},
		{"bad severity on a manifest", head + "policyDefaults:\n  namespace: p\n  consolidateManifests: false\npolicies:\n- name: a\n  manifests:\n  - path: x.yaml\n    severity: urgent\n", `policies[0] (a).manifests[0].severity is "urgent"`},
		{"bad interval", head + "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  evaluationInterval:\n    noncompliant: soon\n  manifests:\n  - path: x.yaml\n", `policies[0] (a).evaluationInterval.noncompliant is "soon": not a duration`},
		{"consolidated manifest option", head + "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  manifests:\n  - path: x.yaml\n    remediationAction: enforce\n", "manifests[0] sets remediationAction, which must be set on the policy when consolidateManifests is true"},
		{"order and consolidate", head + "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  orderManifests: true\n  consolidateManifests: true\n  manifests:\n  - path: x.yaml\n", "may not set orderManifests when consolidateManifests is true"},
		{"order and extra dependencies", head + "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  orderManifests: true\n  extraDependencies:\n  - name: b\n  manifests:\n  - path: x.yaml\n", "may not set extraDependencies when orderManifests is true"},
		{"orderPolicies and dependencies", head + "policyDefaults:\n  namespace: p\n  orderPolicies: true\n  dependencies:\n  - name: b\npolicies:\n- name: a\n  manifests:\n  - path: x.yaml\n", "only one of dependencies and orderPolicies"},
		{"dependency without name", head + "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  dependencies:\n  - kind: Policy\n  manifests:\n  - path: x.yaml\n", "policies[0] (a).dependencies[0].name is empty"},
		{"two placements", head + "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  placement:\n    placementName: x\n    labelSelector:\n      a: b\n  manifests:\n  - path: x.yaml\n", "policies[0] (a).placement must set only one of"},
		{"bad selector", head + "policyDefaults:\n  namespace: p\n  placement:\n    labelSelector:\n      matchExpressions:\n      - key: a\n        operator: Sometimes\npolicies:\n- name: a\n  manifests:\n  - path: x.yaml\n", "policyDefaults.placement.labelSelector"},
		{"selector values not strings", head + "policyDefaults:\n  namespace: p\n  placement:\n    labelSelector:\n      a: [b]\npolicies:\n- name: a\n  manifests:\n  - path: x.yaml\n", "neither a label selector"},
		{"bad binding name", head + "placementBindingDefaults:\n  name: Not_OK\npolicyDefaults:\n  namespace: p\npolicies:\n- name: a\n  manifests:\n  - path: x.yaml\n", "placementBindingDefaults.name"},
		{"set of unknown policy", head + "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  manifests:\n  - path: x.yaml\npolicySets:\n- name: s\n  policies: [ghost]\n", `policySets[0] (s) lists policy "ghost"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.yaml), "gen.yaml")
			if err == nil {
				err = cfg.Resolve()
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), "gen.yaml")
		})
	}
}

// TestResolveDefaults: what a policy and its manifests inherit, and what an
// explicit value (false, "") keeps.
func TestResolveDefaults(t *testing.T) {
	cfg, err := Parse([]byte(head+`policyDefaults:
  namespace: p
  severity: high
  copyPolicyMetadata: false
  evaluationInterval: {compliant: 10m, noncompliant: 1m}
  policySets: [base]
policies:
- name: a
  manifests:
  - path: x.yaml
- name: b
  copyPolicyMetadata: true
  consolidateManifests: false
  evaluationInterval: {compliant: ""}
  policySets: [base, extra]
  manifests:
  - path: x.yaml
    severity: low
`), "gen.yaml")
	require.NoError(t, err)
	require.NoError(t, cfg.Resolve())
	a, b := cfg.Policies[0], cfg.Policies[1]
	require.False(t, *a.CopyPolicyMetadata)
	require.True(t, *b.CopyPolicyMetadata)
	require.True(t, *a.ConsolidateManifests)
	require.Equal(t, "inform", a.RemediationAction)
	require.Equal(t, "high", a.Manifests[0].Severity)
	require.Equal(t, "low", b.Manifests[0].Severity)
	require.Equal(t, "10m", *a.Manifests[0].EvaluationInterval.Compliant)
	require.Equal(t, "", *b.Manifests[0].EvaluationInterval.Compliant, "an explicit empty value is kept")
	require.Equal(t, "1m", *b.Manifests[0].EvaluationInterval.NonCompliant)
	require.Equal(t, []string{"NIST SP 800-53"}, a.Standards)
	require.Equal(t, []string{"base"}, a.PolicySets)
	require.Equal(t, []string{"base", "extra"}, b.PolicySets)
	require.Len(t, cfg.PolicySets, 2)
	require.Equal(t, []string{"a", "b"}, cfg.PolicySets[0].Policies)
	require.Equal(t, []string{"b"}, cfg.PolicySets[1].Policies)
}
