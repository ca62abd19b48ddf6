package badinput_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// badInput is one row: objects created in order (before must be admitted;
// the last document of bad is the bad input), then either a refusal naming
// refused, or the bad object's own status satisfying status.
type badInput struct {
	name string
	// before are created first and must be admitted (a namespace, the first
	// of two conflicting works, ...).
	before string
	// bad is the bad object (YAML).
	bad string
	// statusPatch, when set, is merged into the bad object's status after it
	// is created: that write is the bad input.
	statusPatch string
	// refused is the field path the refusal must name; "" when the input is
	// admitted.
	refused string
	// status checks the admitted bad object's own status.
	status func(c *assert.CollectT, u *unstructured.Unstructured)
}

// In the fixtures, $ROW is the row's name, $NS its namespace (bad-$ROW),
// $CLUSTER the managed cluster, $HUGE 100,000 characters and $LONG 300.
func expand(text, row string) string {
	return strings.NewReplacer("$ROW", row, "$NS", "bad-"+row, "$CLUSTER", cluster,
		"$HUGE", strings.Repeat("x", 100000), "$LONG", strings.Repeat("a", 300)).Replace(text)
}

// ns is the row's own namespace on the hub.
const ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: $NS}\n"

// bound is the row's namespace bound to the global set, so its Placements schedule.
const bound = ns + "---\napiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSetBinding\nmetadata: {name: global, namespace: $NS}\nspec: {clusterSet: global}\n"

// spokeNS is the row's own namespace on the managed cluster, for policies.
const spokeNS = "apiVersion: v1\nkind: Namespace\nmetadata: {name: $NS, annotations: {badinput.flotilla.dev/on: spoke}}\n"

func placement(spec string) string {
	return "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata: {name: bad, namespace: $NS}\nspec:\n" + spec
}

func managedCluster(spec string) string {
	return "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata: {name: bad-$ROW}\nspec:\n" + spec
}

// work carries manifests (a YAML list, indented by 4) to the managed cluster.
func work(name, manifests string) string {
	return "apiVersion: work.open-cluster-management.io/v1\nkind: ManifestWork\nmetadata: {name: " + name +
		", namespace: $CLUSTER}\nspec:\n  workload:\n    manifests:\n" + manifests
}

func cm(name, extra string) string {
	return "    - {apiVersion: v1, kind: ConfigMap, metadata: {name: " + name + ", namespace: default}" + extra + "}\n"
}

func replicaSet(spec string) string {
	return "apiVersion: work.open-cluster-management.io/v1alpha1\nkind: ManifestWorkReplicaSet\nmetadata: {name: bad, namespace: $NS}\nspec:\n" + spec
}

const rsTemplate = "  manifestWorkTemplate:\n    workload:\n      manifests:\n      - {apiVersion: v1, kind: ConfigMap, metadata: {name: rs-$ROW, namespace: default}}\n"

func policy(spec string) string {
	return "apiVersion: policy.open-cluster-management.io/v1\nkind: ConfigurationPolicy\nmetadata: {name: bad, namespace: $NS}\nspec:\n" + spec
}

const cmTemplate = "  object-templates:\n  - complianceType: musthave\n    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: $NS}}\n"

func cond(typ, status string, parts ...string) func(c *assert.CollectT, u *unstructured.Unstructured) {
	return func(c *assert.CollectT, u *unstructured.Unstructured) { hasCondition(c, u, typ, status, parts...) }
}

var rows = []badInput{
	// Placement.
	{name: "p-noc-over-int32", before: ns, bad: placement("  numberOfClusters: 2147483648\n"), refused: "spec.numberOfClusters"},
	{name: "p-noc-negative", before: ns, bad: placement("  numberOfClusters: -1\n"), refused: "spec.numberOfClusters"},
	{name: "p-noc-fraction", before: ns, bad: placement("  numberOfClusters: 1.5\n"), refused: "spec.numberOfClusters"},
	{name: "p-toleration-operator", before: ns, bad: placement("  tolerations: [{key: k, operator: Bogus}]\n"), refused: "spec.tolerations[].operator"},
	{name: "p-toleration-seconds", before: ns, bad: placement("  tolerations: [{key: k, operator: Exists, tolerationSeconds: -5}]\n"), refused: "spec.tolerations[].tolerationSeconds"},
	{name: "p-toleration-effect", before: ns, bad: placement("  tolerations: [{key: k, operator: Exists, effect: Bogus}]\n"), refused: "spec.tolerations[0].effect"},
	{name: "p-clusterset-upper", before: ns, bad: placement("  clusterSets: [Not A Set]\n"), refused: "spec.clusterSets"},
	{name: "p-clusterset-empty", before: ns, bad: placement("  clusterSets: ['']\n"), refused: "spec.clusterSets"},
	{name: "p-clusterset-long", before: ns, bad: placement("  clusterSets: [$LONG]\n"), refused: "spec.clusterSets"},
	{name: "p-huge-label", before: ns, bad: strings.Replace(placement("  {}\n"), "namespace: $NS}", "namespace: $NS, labels: {a: $HUGE}}", 1), refused: "metadata.labels"},
	{name: "p-maxskew-zero", before: ns, bad: placement("  spreadPolicy: {spreadConstraints: [{topologyKey: k, topologyKeyType: Label, maxSkew: 0}]}\n"), refused: "maxSkew"},
	{name: "p-weight-11", before: ns, bad: placement("  prioritizerPolicy: {mode: Additive, configurations: [{scoreCoordinate: {type: BuiltIn, builtIn: Balance}, weight: 11}]}\n"), refused: "weight"},
	{name: "p-per-group-bad", before: ns, bad: placement("  decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: '0%'}}\n"), refused: "clustersPerDecisionGroup"},
	{name: "p-per-group-negative", before: ns, bad: placement("  decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: -3}}\n"), refused: "clustersPerDecisionGroup"},
	{name: "p-huge-cel", before: ns, bad: placement("  predicates: [{requiredClusterSelector: {celSelector: {celExpressions: [\"managedCluster.metadata.name == '$HUGE' &&\"]}}}]\n"),
		refused: "spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[0]"},
	{name: "p-selector-huge-value", before: ns, bad: placement("  predicates: [{requiredClusterSelector: {labelSelector: {matchLabels: {a: $HUGE}}}}]\n"),
		refused: "spec.predicates[0].requiredClusterSelector.labelSelector"},
	{name: "p-selector-operator", before: ns, bad: placement("  predicates: [{requiredClusterSelector: {labelSelector: {matchExpressions: [{key: a, operator: Bogus, values: [b]}]}}}]\n"),
		refused: "spec.predicates[0].requiredClusterSelector.labelSelector"},
	{name: "p-unknown-prioritizer", before: bound, bad: placement("  numberOfClusters: 1\n  prioritizerPolicy: {mode: Exact, configurations: [{scoreCoordinate: {type: BuiltIn, builtIn: Bogus}, weight: 1}]}\n"),
		refused: `spec.prioritizerPolicy.configurations[0].scoreCoordinate.builtIn: unknown prioritizer "Bogus"`},
	{name: "p-duplicate-groups", before: bound, bad: placement("  decisionStrategy: {groupStrategy: {decisionGroups: [{groupName: gg, groupClusterSelector: {}}, {groupName: gg, groupClusterSelector: {}}]}}\n"),
		refused: `spec.decisionStrategy.groupStrategy.decisionGroups[1].groupName "gg" is already the name of decisionGroups[0]`},
	{name: "p-missing-set", before: ns, bad: placement("  clusterSets: [does-not-exist]\n"),
		status: cond("PlacementSatisfied", "False")},

	// ManagedCluster.
	{name: "mc-lease-negative", bad: managedCluster("  leaseDurationSeconds: -1\n"), refused: "spec.leaseDurationSeconds"},
	{name: "mc-lease-over-int32", bad: managedCluster("  leaseDurationSeconds: 2147483648\n"), refused: "spec.leaseDurationSeconds"},
	{name: "mc-url", bad: managedCluster("  managedClusterClientConfigs: [{url: not a url}]\n"), refused: "spec.managedClusterClientConfigs[].url"},
	{name: "mc-url-ftp", bad: managedCluster("  managedClusterClientConfigs: [{url: 'ftp://h'}]\n"), refused: "spec.managedClusterClientConfigs[].url"},
	{name: "mc-cabundle", bad: managedCluster("  managedClusterClientConfigs: [{url: 'https://h', caBundle: '%%%'}]\n"), refused: "caBundle"},
	{name: "mc-taint-effect", bad: managedCluster("  taints: [{key: k, effect: Bogus, timeAdded: null}]\n"), refused: "effect"},
	{name: "mc-huge-label", bad: strings.Replace(managedCluster("  {}\n"), "name: bad-$ROW}", "name: bad-$ROW, labels: {a: $HUGE}}", 1), refused: "metadata.labels"},
	{name: "mc-reserved-name", bad: strings.Replace(managedCluster("  {}\n"), "name: bad-$ROW", "name: kube-system", 1), refused: "kube-system"},

	// ManifestWork.
	{name: "w-key-100k", bad: `{"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork", "metadata": {"name": "w-$ROW", "namespace": "$CLUSTER"},
		"spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "key-$ROW", "namespace": "default"}, "data": {"$HUGE": "v"}}]}}}`,
		status: cond("Applied", "False", "[truncated: ")},
	{name: "w-no-manifests", bad: work("w-$ROW", "      []\n"), refused: "spec.workload.manifests"},
	{name: "w-empty-manifest", bad: work("w-$ROW", "    - {}\n"), refused: "spec.workload.manifests"},
	{name: "w-no-name", bad: work("w-$ROW", "    - {apiVersion: v1, kind: ConfigMap, metadata: {namespace: default}}\n"), refused: "manifest 0 (ConfigMap) has no metadata.name"},
	{name: "w-duplicate", bad: work("w-$ROW", cm("dup-$ROW", "")+cm("dup-$ROW", "")), refused: "manifest 1 (ConfigMap default/dup-w-duplicate) duplicates manifest 0"},
	{name: "w-ttl-negative", bad: strings.Replace(work("w-$ROW", cm("ttl-$ROW", "")), "spec:\n", "spec:\n  deleteOption: {propagationPolicy: Foreground, ttlSecondsAfterFinished: -1}\n", 1),
		refused: "spec.deleteOption.ttlSecondsAfterFinished"},
	{name: "w-huge-label", bad: strings.Replace(work("w-$ROW", cm("l-$ROW", "")), "namespace: $CLUSTER}", "namespace: $CLUSTER, labels: {a: $HUGE}}", 1), refused: "metadata.labels"},
	{name: "w-wrong-apiversion", bad: work("w-$ROW", "    - {apiVersion: v2, kind: ConfigMap, metadata: {name: v2-$ROW, namespace: default}}\n"),
		status: cond("Applied", "False", "ConfigMap")},
	{name: "w-unknown-kind", bad: work("w-$ROW", "    - {apiVersion: example.com/v1, kind: Widget, metadata: {name: wd-$ROW, namespace: default}}\n"),
		status: cond("Applied", "False", "Widget")},
	{name: "w-missing-namespace", bad: work("w-$ROW", "    - {apiVersion: v1, kind: ConfigMap, metadata: {name: m-$ROW, namespace: does-not-exist}}\n"),
		status: cond("Applied", "False", "does-not-exist")},
	{name: "w-invalid-content", bad: work("w-$ROW", cm("ic-$ROW", ", data: {a: {b: c}}")),
		status: cond("Applied", "False", "data")},
	{name: "w-two-works-one-object", before: work("first-$ROW", cm("shared-$ROW", ", data: {from: first}")),
		bad:    work("second-$ROW", cm("shared-$ROW", ", data: {from: second}")),
		status: cond("Conflict", "True", "first-w-two-works-one-object")},

	// ManifestWorkReplicaSet.
	{name: "rs-min-success", before: ns, bad: replicaSet("  placementRefs: [{name: p, rolloutStrategy: {type: All, all: {minSuccessTime: bogus}}}]\n" + rsTemplate),
		refused: "minSuccessTime"},
	{name: "rs-progress-deadline", before: ns, bad: replicaSet("  placementRefs: [{name: p, rolloutStrategy: {type: All, all: {progressDeadline: 5hjunk}}}]\n" + rsTemplate),
		refused: "progressDeadline"},
	{name: "rs-max-failures", before: ns, bad: replicaSet("  placementRefs: [{name: p, rolloutStrategy: {type: Progressive, progressive: {maxFailures: -1}}}]\n" + rsTemplate),
		refused: "maxFailures"},
	{name: "rs-ttl-negative", before: ns, bad: replicaSet("  placementRefs: [{name: p}]\n" + rsTemplate + "    deleteOption: {propagationPolicy: Foreground, ttlSecondsAfterFinished: -1}\n"),
		refused: "spec.manifestWorkTemplate.deleteOption.ttlSecondsAfterFinished"},
	{name: "rs-missing-placement", before: ns, bad: replicaSet("  placementRefs: [{name: does-not-exist}]\n" + rsTemplate),
		status: cond("PlacementVerified", "False")},

	// ManagedClusterSet and ManagedClusterSetBinding.
	{name: "set-bad-name", bad: "apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSet\nmetadata: {name: Not_A_Set}\n", refused: "metadata.name"},
	{name: "set-selector-type", bad: "apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSet\nmetadata: {name: bad-$ROW}\nspec: {clusterSelector: {selectorType: Bogus}}\n",
		refused: "spec.clusterSelector.selectorType"},
	{name: "binding-empty-set", before: ns, bad: "apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSetBinding\nmetadata: {name: x, namespace: $NS}\nspec: {clusterSet: ''}\n",
		refused: "spec.clusterSet"},
	{name: "binding-other-name", before: ns, bad: "apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSetBinding\nmetadata: {name: x, namespace: $NS}\nspec: {clusterSet: global}\n",
		refused: "metadata.name"},
	{name: "binding-missing-set", before: ns, bad: "apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSetBinding\nmetadata: {name: does-not-exist, namespace: $NS}\nspec: {clusterSet: does-not-exist}\n",
		status: cond("Bound", "False")},

	// AddOnPlacementScore.
	{name: "score-value-101", bad: "apiVersion: cluster.open-cluster-management.io/v1alpha1\nkind: AddOnPlacementScore\nmetadata: {name: bad-$ROW, namespace: $CLUSTER}\n",
		statusPatch: `{"status":{"scores":[{"name":"s","value":101}]}}`, refused: "status.scores[0].value"},
	{name: "score-no-name", bad: "apiVersion: cluster.open-cluster-management.io/v1alpha1\nkind: AddOnPlacementScore\nmetadata: {name: bad-$ROW, namespace: $CLUSTER}\n",
		statusPatch: `{"status":{"scores":[{"value":1}]}}`, refused: "status.scores[0].name"},
	{name: "score-valid-until", bad: "apiVersion: cluster.open-cluster-management.io/v1alpha1\nkind: AddOnPlacementScore\nmetadata: {name: bad-$ROW, namespace: $CLUSTER}\n",
		statusPatch: `{"status":{"scores":[],"validUntil":"tomorrow"}}`, refused: "status.validUntil"},

	// Addon kinds.
	{name: "cma-min-success", bad: "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ClusterManagementAddOn\nmetadata: {name: bad-$ROW}\nspec:\n  installStrategy: {type: Placements, placements: [{name: p, namespace: default, rolloutStrategy: {type: All, all: {minSuccessTime: 99999999999h}}}]}\n",
		refused: "minSuccessTime"},
	{name: "cma-group-index", bad: "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ClusterManagementAddOn\nmetadata: {name: bad-$ROW}\nspec:\n  installStrategy: {type: Placements, placements: [{name: p, namespace: default, rolloutStrategy: {type: ProgressivePerGroup, progressivePerGroup: {mandatoryDecisionGroups: [{groupIndex: 2147483648}]}}}]}\n",
		refused: "groupIndex"},
	{name: "mca-install-namespace", bad: "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ManagedClusterAddOn\nmetadata: {name: bad-$ROW, namespace: $CLUSTER}\nspec: {installNamespace: 'Not A Namespace'}\n",
		refused: "spec.installNamespace"},
	{name: "adc-quantity", before: ns, bad: "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnDeploymentConfig\nmetadata: {name: bad, namespace: $NS}\nspec: {resourceRequirements: [{containerID: '*:*:*', resources: {requests: {cpu: 1e1.5}}}]}\n",
		refused: "spec.resourceRequirements[].resources"},
	{name: "adc-toleration-operator", before: ns, bad: "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnDeploymentConfig\nmetadata: {name: bad, namespace: $NS}\nspec: {nodePlacement: {tolerations: [{key: k, operator: Bogus}]}}\n",
		refused: "spec.nodePlacement.tolerations[].operator"},

	// ConfigurationPolicy (on the managed cluster).
	{name: "cp-destroy", before: spokeNS, bad: policy("  remediationAction: destroy\n" + cmTemplate), refused: "spec.remediationAction"},
	{name: "cp-severity", before: spokeNS, bad: policy("  remediationAction: inform\n  severity: extreme\n" + cmTemplate), refused: "spec.severity"},
	{name: "cp-interval", before: spokeNS, bad: policy("  remediationAction: inform\n  evaluationInterval: {compliant: 1x5m}\n" + cmTemplate), refused: "spec.evaluationInterval.compliant"},
	{name: "cp-compliance-type", before: spokeNS, bad: policy("  remediationAction: inform\n  object-templates: [{complianceType: mustbe, objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}}]\n"),
		refused: "complianceType"},
	{name: "cp-prune", before: spokeNS, bad: policy("  remediationAction: inform\n  pruneObjectBehavior: Everything\n" + cmTemplate), refused: "spec.pruneObjectBehavior"},
	{name: "cp-unknown-kind", before: spokeNS, bad: policy("  remediationAction: inform\n  object-templates: [{complianceType: musthave, objectDefinition: {apiVersion: example.com/v1, kind: Widget, metadata: {name: x, namespace: $NS}}}]\n"),
		status: func(c *assert.CollectT, u *unstructured.Unstructured) {
			fieldIs(c, u, "NonCompliant", "status", "compliant")
			hasCondition(c, u, "violation", "True", "Widget")
		}},
}

func TestBadInputs(t *testing.T) {
	cs := newClients(t)
	joinCluster(t, env.Clusters[0])
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			kind := tryBad(t, cs, row)
			good := goodChecks[kind]
			require.NotNil(t, good, "no good check for kind %s", kind)
			good(t, cs, row.name)
		})
	}
	t.Run("undecodable", func(t *testing.T) { testUndecodable(t, cs) })
}

// tryBad feeds row's bad input and checks its outcome; it returns the kind of
// the bad object.
func tryBad(t *testing.T, cs clients, row badInput) string {
	t.Helper()
	var before []*unstructured.Unstructured
	if row.before != "" {
		before = decode(t, expand(row.before, row.name))
	}
	bad := decode(t, expand(row.bad, row.name))
	require.Len(t, bad, 1, "one bad object per row")
	u := bad[0]
	for _, b := range before {
		if b.GetAnnotations()["badinput.flotilla.dev/on"] == "spoke" {
			require.NoError(t, cs.spoke.Create(context.Background(), b.DeepCopy()))
			t.Cleanup(func() { cs.remove(t, cs.spoke, b) })
			continue
		}
		require.NoError(t, cs.create(t, []*unstructured.Unstructured{b}))
	}
	err := cs.create(t, bad)
	if err == nil && row.statusPatch != "" {
		err = cs.For(u).Status().Patch(context.Background(), u.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(row.statusPatch)))
	}
	if row.refused != "" {
		require.Error(t, err, "the bad input is refused")
		msg := err.Error()
		if len(msg) > 2000 {
			msg = msg[:1000] + " ... " + msg[len(msg)-1000:]
		}
		assert.Contains(t, msg, row.refused, "the refusal names the field")
		t.Logf("refused: %s", msg)
		return u.GetKind()
	}
	require.NoError(t, err, "the bad input is admitted (and reported on its status)")
	eventually(t, func(c *assert.CollectT) { row.status(c, cs.get(c, u)) }, "%s %s reports the problem on its status", u.GetKind(), key(u))
	t.Logf("reported: %s", brief(conditions(cs.get(t, u))))
	return u.GetKind()
}
