package badinput_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"flotilla.dev/flotilla/test/malformed"
)

// malformedBases are good objects of every kind a user writes, with specs
// rich enough that many of their fields get mutated. $CLUSTER is the managed
// cluster; the hub's namespaced kinds live in namespace "mal", bound to the
// global set, and ConfigurationPolicies in "mal" on the managed cluster.
const malformedBases = `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p, namespace: mal, labels: {team: a}}
spec:
  numberOfClusters: 1
  clusterSets: [global]
  predicates:
  - requiredClusterSelector:
      labelSelector: {matchExpressions: [{key: env, operator: NotIn, values: [dev]}]}
      claimSelector: {matchExpressions: [{key: region, operator: Exists}]}
  tolerations:
  - {key: cluster.open-cluster-management.io/unreachable, operator: Exists, tolerationSeconds: 60}
  prioritizerPolicy:
    mode: Additive
    configurations:
    - {scoreCoordinate: {type: BuiltIn, builtIn: Steady}, weight: 2}
  spreadPolicy: {spreadConstraints: [{topologyKey: region, topologyKeyType: Claim, maxSkew: 1, whenUnsatisfiable: ScheduleAnyway}]}
  decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: 50%, decisionGroups: [{groupName: canary, groupClusterSelector: {labelSelector: {matchLabels: {canary: "true"}}}}]}}
---
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: w, namespace: $CLUSTER, labels: {app: mal}}
spec:
  workload:
    manifests:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: mal-cm, namespace: default, labels: {a: b}}, data: {k: v}}
  deleteOption: {propagationPolicy: Foreground}
  manifestConfigs:
  - resourceIdentifier: {resource: configmaps, name: mal-cm, namespace: default}
    feedbackRules: [{type: JSONPaths, jsonPaths: [{name: k, path: .data.k}]}]
    updateStrategy: {type: ServerSideApply, serverSideApply: {force: false, fieldManager: work-agent-mal}}
---
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: rs, namespace: mal}
spec:
  placementRefs:
  - name: p
    rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 1, minSuccessTime: 5s, progressDeadline: 1m, maxFailures: 0}}
  manifestWorkTemplate:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: mal-rs, namespace: default}, data: {k: v}}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: set}
spec: {clusterSelector: {selectorType: LabelSelector, labelSelector: {matchLabels: {env: prod}}}}
---
apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata: {name: pol, namespace: mal, annotations: {policy.open-cluster-management.io/standards: NIST SP 800-53, policy.open-cluster-management.io/controls: CM-2 Baseline Configuration}}
spec:
  remediationAction: inform
  disabled: false
  dependencies: [{apiVersion: policy.open-cluster-management.io/v1, kind: Policy, name: other, namespace: mal, compliance: Compliant}]
  policy-templates:
  - objectDefinition:
      apiVersion: policy.open-cluster-management.io/v1
      kind: ConfigurationPolicy
      metadata: {name: cm}
      spec:
        remediationAction: inform
        severity: low
        object-templates:
        - {complianceType: musthave, objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: default}}}
---
apiVersion: policy.open-cluster-management.io/v1
kind: PlacementBinding
metadata: {name: pb, namespace: mal}
placementRef: {name: p, kind: Placement, apiGroup: cluster.open-cluster-management.io}
subjects: [{name: pol, kind: Policy, apiGroup: policy.open-cluster-management.io}]
bindingOverrides: {remediationAction: enforce}
subFilter: restricted
---
apiVersion: policy.open-cluster-management.io/v1beta1
kind: PolicySet
metadata: {name: ps, namespace: mal}
spec: {description: a set, policies: [pol]}
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata: {name: cma}
spec:
  addOnMeta: {displayName: mal, description: a malformed addon}
  supportedConfigs: [{group: addon.open-cluster-management.io, resource: addondeploymentconfigs, defaultConfig: {name: adc, namespace: mal}}]
  installStrategy:
    type: Placements
    placements:
    - {name: p, namespace: mal, rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 1}}}
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: mca, namespace: $CLUSTER}
spec:
  installNamespace: mal-agent
  configs: [{group: addon.open-cluster-management.io, resource: addondeploymentconfigs, name: adc, namespace: mal}]
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata: {name: adc, namespace: mal}
spec:
  customizedVariables: [{name: LOG_LEVEL, value: "2"}]
  nodePlacement: {nodeSelector: {a: b}, tolerations: [{key: k, operator: Exists, effect: NoSchedule}]}
  registries: [{source: quay.io/a, mirror: example.com/a}]
  agentInstallNamespace: mal-agent
  resourceRequirements: [{containerID: "deployments:*:*", resources: {requests: {cpu: 100m, memory: 64Mi}}}]
---
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: cp, namespace: mal}
spec:
  remediationAction: inform
  severity: medium
  evaluationInterval: {compliant: 10s, noncompliant: 5s}
  namespaceSelector: {include: [default], exclude: [kube-*]}
  object-templates:
  - complianceType: musthave
    recordDiff: InStatus
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: wanted, namespace: mal}, data: {a: b}}
`

// handled tells, for the kinds a Flotilla controller writes status on,
// whether an admitted object's status shows it was handled (or reports its
// problem). Kinds not listed are checked at admission only, and by the good
// objects created after the batch.
var handled = map[string]func(u *unstructured.Unstructured) bool{
	"Placement": func(u *unstructured.Unstructured) bool {
		return hasType(u, "PlacementSatisfied") || hasType(u, "PlacementMisconfigured")
	},
	"ManifestWork":           func(u *unstructured.Unstructured) bool { return hasType(u, "Applied") || hasType(u, "Conflict") },
	"ManifestWorkReplicaSet": func(u *unstructured.Unstructured) bool { return hasType(u, "PlacementVerified") },
	"ManagedClusterSet":      func(u *unstructured.Unstructured) bool { return hasType(u, "ClusterSetEmpty") },
	"ConfigurationPolicy": func(u *unstructured.Unstructured) bool {
		s, _, _ := unstructured.NestedString(u.Object, "status", "compliant")
		return s != ""
	},
}

func hasType(u *unstructured.Unstructured, typ string) bool {
	for _, c := range conditions(u) {
		if c["type"] == typ {
			return true
		}
	}
	return false
}

// malformedCount is how many malformed objects TestMalformed feeds
// (FLOTILLA_MALFORMED_COUNT overrides it), malformedSeed the default seed
// (FLOTILLA_MALFORMED_SEED overrides it).
const (
	malformedCount = 1000
	malformedSeed  = 20261124
)

func envInt(t *testing.T, name string, def uint64) uint64 {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "%s", name)
		return n
	}
	return def
}

// TestMalformed feeds a thousand malformed objects of every kind through the
// real apiserver and hub: each is refused with a message naming the mutated
// field (or its parent), or admitted and then handled (its status written,
// reporting the problem if it has one). Afterwards a good object of every kind
// is still handled.
func TestMalformed(t *testing.T) {
	cs := newClients(t)
	joinCluster(t, env.Clusters[0])
	seed := envInt(t, "FLOTILLA_MALFORMED_SEED", malformedSeed)
	count := int(envInt(t, "FLOTILLA_MALFORMED_COUNT", malformedCount))
	t.Logf("seed %d (FLOTILLA_MALFORMED_SEED), %d objects", seed, count)

	require.NoError(t, cs.create(t, decode(t, expand(strings.ReplaceAll(bound, "$NS", "mal"), "mal"))))
	spokeNS := decode(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: mal}\n")[0]
	require.NoError(t, cs.spoke.Create(context.Background(), spokeNS))
	t.Cleanup(func() { cs.remove(t, cs.spoke, spokeNS) })

	bases := decode(t, expand(malformedBases, "mal"))
	for _, b := range bases { // the bases themselves are good
		b := b.DeepCopy()
		b.SetName("base-" + strings.ToLower(b.GetKind()))
		require.NoError(t, cs.create(t, []*unstructured.Unstructured{b}), "base %s", b.GetKind())
	}
	cases, err := malformed.Generate(seed, bases, count, "m-")
	require.NoError(t, err)

	type tally struct{ refused, admitted, problems int }
	byKind := map[string]*tally{}
	var admitted []malformed.Case
	var problems []string
	for _, c := range cases {
		kind := c.Object.GetKind()
		if byKind[kind] == nil {
			byKind[kind] = &tally{}
		}
		err := cs.create(t, []*unstructured.Unstructured{c.Object})
		switch {
		case err == nil:
			byKind[kind].admitted++
			if handled[kind] != nil {
				admitted = append(admitted, c)
			}
		case c.Names(err.Error()):
			byKind[kind].refused++
		default:
			byKind[kind].problems++
			msg := err.Error()
			if len(msg) > 400 {
				msg = msg[:400] + "..."
			}
			problems = append(problems, fmt.Sprintf("%s: refused without naming %q: %s", c, c.Field, msg))
		}
	}

	// Every admitted object of a kind with a controller gets handled.
	pending := admitted
	assert.Eventually(t, func() bool {
		var still []malformed.Case
		for _, c := range pending {
			if !handled[c.Object.GetKind()](cs.get(t, c.Object)) {
				still = append(still, c)
			}
		}
		pending = still
		return len(pending) == 0
	}, 2*time.Minute, tick, "every admitted object is handled")
	for _, c := range pending {
		byKind[c.Object.GetKind()].problems++
		problems = append(problems, fmt.Sprintf("%s: admitted but never handled; conditions: %s", c, brief(conditions(cs.get(t, c.Object)))))
	}

	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	fmt.Fprintf(&b, "%-26s %8s %9s %9s\n", "KIND", "REFUSED", "ADMITTED", "PROBLEMS")
	for _, k := range kinds {
		fmt.Fprintf(&b, "%-26s %8d %9d %9d\n", k, byKind[k].refused, byKind[k].admitted, byKind[k].problems)
	}
	t.Logf("malformed objects (seed %d):\n%s", seed, b.String())
	assert.Empty(t, problems, "every malformed object is refused naming its field, or admitted and handled")

	// The controllers still handle good objects of every kind.
	for _, kind := range kinds {
		good := goodChecks[kind]
		if good == nil {
			continue
		}
		t.Run("good "+kind, func(t *testing.T) { good(t, cs, "after-mal-"+strings.ToLower(kind)) })
	}
}
