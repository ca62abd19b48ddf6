package malformed

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(text), &u.Object))
	return u
}

const placement = `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p, namespace: ns, labels: {team: a}}
spec:
  numberOfClusters: 2
  clusterSets: [global]
  predicates:
  - requiredClusterSelector: {labelSelector: {matchLabels: {env: prod}}}
`

func TestPaths(t *testing.T) {
	var got []string
	for _, p := range Paths(obj(t, placement).Object) {
		got = append(got, String(p))
	}
	assert.Equal(t, []string{
		"spec",
		"spec.clusterSets", "spec.clusterSets[0]",
		"spec.numberOfClusters",
		"spec.predicates", "spec.predicates[0]", "spec.predicates[0].requiredClusterSelector",
		"spec.predicates[0].requiredClusterSelector.labelSelector",
		"spec.predicates[0].requiredClusterSelector.labelSelector.matchLabels",
		"spec.predicates[0].requiredClusterSelector.labelSelector.matchLabels.env",
		"metadata.labels", "metadata.labels.team",
	}, got)
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		path          []step
		field, parent string
	}{
		{[]step{{"spec", -1}}, "spec", ""},
		{[]step{{"spec", -1}, {"clusterSets", -1}, {"", 0}}, "clusterSets", "spec"},
		{[]step{{"spec", -1}, {"predicates", -1}, {"", 0}, {"requiredClusterSelector", -1}}, "requiredClusterSelector", "predicates"},
	} {
		f, p := names(tc.path)
		assert.Equal(t, tc.field, f, String(tc.path))
		assert.Equal(t, tc.parent, p, String(tc.path))
	}
	c := Case{Path: "spec.predicates[0].requiredClusterSelector", Field: "requiredClusterSelector", Parent: "predicates"}
	assert.True(t, c.Names(`spec.predicates[0].requiredClusterSelector: Invalid value`))
	assert.True(t, c.Names(`spec.predicates: Invalid value: "string"`))
	assert.False(t, c.Names(`spec: Invalid value`), "spec alone names nothing")
	md := Case{Path: "spec.workload.manifests[0].metadata", Field: "metadata", Parent: "manifests"}
	assert.True(t, md.Names(`manifest 0 (ConfigMap) has no metadata.name`))
	assert.False(t, md.Names(`the metadata is wrong`))
	top := Case{Path: "spec", Field: "spec"}
	assert.True(t, top.Names(`spec: Invalid value: "string": spec in body must be of type object`))
	assert.False(t, c.Names(`admission webhook denied the request`))
}

func TestGenerate(t *testing.T) {
	base := obj(t, placement)
	cases, err := Generate(7, []*unstructured.Unstructured{base}, 500, "m-")
	require.NoError(t, err)
	require.Len(t, cases, 500)
	again, err := Generate(7, []*unstructured.Unstructured{base}, 500, "m-")
	require.NoError(t, err)
	used := map[string]bool{}
	for i, c := range cases {
		assert.Equal(t, c.String(), again[i].String(), "the same seed gives the same cases")
		assert.Equal(t, "m-"+strconv.Itoa(i), c.Object.GetName())
		assert.Equal(t, "ns", c.Object.GetNamespace(), "only the name changes in metadata's identity")
		assert.False(t, equality.Semantic.DeepEqual(base.Object["spec"], c.Object.Object["spec"]) &&
			equality.Semantic.DeepEqual(base.GetLabels(), c.Object.GetLabels()), "case %d changes something: %s", i, c)
		used[c.Mutation] = true
	}
	assert.Equal(t, "p", base.GetName(), "the base is not modified")
	assert.EqualValues(t, 2, base.Object["spec"].(map[string]any)["numberOfClusters"])
	assert.Len(t, used, len(mutations), "500 cases use every mutation")

	_, err = Generate(1, nil, 1, "m-")
	assert.ErrorContains(t, err, "no base objects")
	_, err = Generate(1, []*unstructured.Unstructured{obj(t, "kind: ConfigMap\nmetadata: {name: x}\n")}, 1, "m-")
	assert.ErrorContains(t, err, "ConfigMap/x has nothing to mutate")
}
