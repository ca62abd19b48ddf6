package admission_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var distributionPolicies = schema.GroupVersionResource{Group: "flotilla.dev", Version: "v1alpha1", Resource: "distributionpolicies"}

const distributionpolicy = `
apiVersion: flotilla.dev/v1alpha1
kind: DistributionPolicy
metadata: {namespace: default}
`

// DistributionPolicy (flotilla.dev, Flotilla's CRD): what its schema refuses
// with no hub running. Selectors and templates the schema cannot judge
// cheaply are the hub webhook's (hub/placement TestDistributionPolicyWebhook).
func TestAdmissionDistributionPolicy(t *testing.T) {
	rule := func(body string) string {
		return distributionpolicy + "spec:\n  overrides:\n  - {name: r, " + body + "}\n"
	}
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []admissionCase{
		{"rule name upper case", distributionPolicies, distributionpolicy + "spec: {overrides: [{name: Eu}]}", "spec.overrides[0].name"},
		{"rule without name", distributionPolicies, distributionpolicy + "spec: {overrides: [{images: []}]}", "spec.overrides[0].name"},
		{"duplicate rule names", distributionPolicies, distributionpolicy + "spec: {overrides: [{name: a}, {name: a}]}", "spec.overrides[1]"},
		{"too many rules", distributionPolicies, distributionpolicy + "spec: {overrides: [" + repeat("{name: r%d}", 65) + "]}", "spec.overrides: Too many"},
		{"image component Host", distributionPolicies, rule("images: [{component: Host, value: x}]"), "spec.overrides[0].images[0].component"},
		{"image operation delete", distributionPolicies, rule("images: [{component: Tag, operation: delete, value: x}]"), "spec.overrides[0].images[0].operation"},
		{"image replace without value", distributionPolicies, rule("images: [{component: Tag}]"), "value is required unless operation is remove"},
		{"image repository removed", distributionPolicies, rule("images: [{component: Repository, operation: remove}]"), "an image's repository cannot be removed"},
		{"image tag with a space", distributionPolicies, rule("images: [{component: Tag, value: 'v 1'}]"), "not a valid image component"},
		{"image registry with a scheme", distributionPolicies, rule("images: [{component: Registry, value: 'https://r.example.com'}]"), "not a valid image component"},
		{"image digest short", distributionPolicies, rule("images: [{component: Digest, value: 'sha256:abc'}]"), "not a valid image component"},
		{"image value too long", distributionPolicies, rule("images: [{component: Tag, value: '" + repeat("x", 513) + "'}]"), "spec.overrides[0].images[0].value: Too long"},
		{"label key with spaces", distributionPolicies, rule("labels: [{key: 'a b', value: x}]"), "spec.overrides[0].labels[0].key"},
		{"args operation insert", distributionPolicies, rule("args: [{operation: insert, values: [x]}]"), "spec.overrides[0].args[0].operation"},
		{"args without values", distributionPolicies, rule("args: [{operation: append, values: []}]"), "spec.overrides[0].args[0].values"},
		{"patch op merge", distributionPolicies, rule("jsonPatch: [{op: merge, path: /spec}]"), "spec.overrides[0].jsonPatch[0].op"},
		{"patch path not a pointer", distributionPolicies, rule("jsonPatch: [{op: remove, path: spec.replicas}]"), "spec.overrides[0].jsonPatch[0].path"},
		{"patch path bad escape", distributionPolicies, rule("jsonPatch: [{op: remove, path: /a~2b}]"), "spec.overrides[0].jsonPatch[0].path"},

		{"patch move without from", distributionPolicies, rule("jsonPatch: [{op: move, path: /spec/x}]"), "move and copy need from"},
		{"division Spread", distributionPolicies, distributionpolicy + "spec: {replicas: {type: Spread}}", "spec.replicas.type"},
		{"Weighted without weights", distributionPolicies, distributionpolicy + "spec: {replicas: {type: Weighted}}", "Weighted needs weights"},
		{"weights with Capacity", distributionPolicies, distributionpolicy + "spec: {replicas: {type: Capacity, weights: [{clusters: {}, weight: 1}]}}", "weights are only read by Weighted"},
		{"weight over 10000", distributionPolicies, distributionpolicy + "spec: {replicas: {type: Weighted, weights: [{clusters: {}, weight: 10001}]}}", "spec.replicas.weights[0].weight"},
		{"weight negative", distributionPolicies, distributionpolicy + "spec: {replicas: {type: Weighted, weights: [{clusters: {}, weight: -1}]}}", "spec.replicas.weights[0].weight"},
		{"weight over int32", distributionPolicies, distributionpolicy + "spec: {replicas: {type: Weighted, weights: [{clusters: {}, weight: 2147483648}]}}", "spec.replicas.weights[0].weight"},
		{"extra kind without resource", distributionPolicies, distributionpolicy + "spec: {replicas: {extraKinds: [{group: example.com, kind: Widget}]}}", "spec.replicas.extraKinds[0].resource"},
		{"good", distributionPolicies, distributionpolicy + `spec:
  overrides:
  - name: eu
    clusters: {labelSelector: {matchLabels: {region: eu}}, claimSelector: {matchExpressions: [{key: id.k8s.io, operator: Exists}]}, names: [c1]}
    manifests: [{group: apps, kind: Deployment, name: web, namespace: apps}]
    images:
    - {component: Registry, value: 'registry.{{ cluster.labels[region] }}.example.com'}
    - {component: Tag, operation: add, value: v1}
    - {component: Digest, value: '` + digest + `'}
    - {component: Tag, operation: remove}
    labels: [{key: example.com/cluster, value: '{{ cluster.name }}'}, {key: app, operation: remove}]
    annotations: [{key: note, operation: add, value: 'any text: {{ cluster.claims[id.k8s.io] }}'}]
    command: [{container: web, operation: append, values: [--flag]}]
    args: [{operation: remove, values: [--debug]}]
    jsonPatch:
    - {op: add, path: /spec/template/spec/priorityClassName, value: high}
    - {op: replace, path: /spec/template/metadata/labels/a~1b, value: {nested: [1, '{{ cluster.name }}']}}
    - {op: move, from: /spec/x, path: /spec/y}
    - {op: remove, path: /spec/strategy}
  replicas:
    type: Weighted
    weights: [{clusters: {labelSelector: {matchLabels: {region: eu}}}, weight: 2}, {clusters: {}, weight: 0}]
    extraKinds: [{group: example.com, kind: Widget, resource: widgets}]
`, ""},
		{"Duplicated by default", distributionPolicies, distributionpolicy + "spec: {replicas: {}}", ""},
	} {
		t.Run(c.name, c.run)
	}
}

// repeat is format (with %d, the index) n times, comma-separated; "x" n times unseparated.
func repeat(format string, n int) string {
	if format == "x" {
		return strings.Repeat("x", n)
	}
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(format, i)
	}
	return strings.Join(parts, ", ")
}
