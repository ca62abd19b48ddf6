package distribute

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
)

// TestValidate lists what the hub's webhook refuses beyond the CRD schema.
func TestValidate(t *testing.T) {
	one := func(r distv1alpha1.OverrideRule) distv1alpha1.DistributionPolicySpec {
		r.Name = "r"
		return distv1alpha1.DistributionPolicySpec{Overrides: []distv1alpha1.OverrideRule{r}}
	}
	tests := []struct {
		name string
		spec distv1alpha1.DistributionPolicySpec
		want []string
	}{
		{"good", one(distv1alpha1.OverrideRule{
			Clusters:  distv1alpha1.ClusterSelector{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu"}}}}},
			Images:    []distv1alpha1.ImageOverride{{Component: distv1alpha1.Registry, Value: "r.{{ cluster.labels[region] }}.example.com"}},
			Labels:    []distv1alpha1.MetadataOverride{{Key: "region", Value: "{{ cluster.labels[region] }}"}},
			JSONPatch: []distv1alpha1.JSONPatchOperation{{Op: "add", Path: "/spec/x", Value: jsonValue([]any{"{{ cluster.name }}"})}},
		}), nil},
		{"label selector operator", one(distv1alpha1.OverrideRule{Clusters: distv1alpha1.ClusterSelector{LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Near", Values: []string{"eu"}}}}}}),
			[]string{`spec.overrides[0].clusters: labelSelector: "Near" is not a valid label selector operator`}},
		{"claim selector In without values", one(distv1alpha1.OverrideRule{Clusters: distv1alpha1.ClusterSelector{ClaimSelector: &clusterv1beta1.ClusterClaimSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "id.k8s.io", Operator: metav1.LabelSelectorOpIn}}}}}),
			[]string{"spec.overrides[0].clusters: claimSelector: values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"}},
		{"template in an image value", one(distv1alpha1.OverrideRule{Images: []distv1alpha1.ImageOverride{{Component: distv1alpha1.Tag, Value: "{{ cluster.zone }}"}}}),
			[]string{`spec.overrides[0].images[0].value: template "{{ cluster.zone }}": want {{ cluster.name }}, {{ cluster.labels[KEY] }} or {{ cluster.claims[NAME] }}`}},
		{"label value invalid", one(distv1alpha1.OverrideRule{Labels: []distv1alpha1.MetadataOverride{{Key: "a", Value: "not valid!"}}}),
			[]string{`spec.overrides[0].labels[0].value: "not valid!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},
		{"template in args", one(distv1alpha1.OverrideRule{Args: []distv1alpha1.ArgsOverride{{Operation: distv1alpha1.ArgsAppend, Values: []string{"--a", "--b={{ cluster.labels[] }}"}}}}),
			[]string{`spec.overrides[0].args[0].values[1]: template "{{ cluster.labels[] }}": want {{ cluster.name }}, {{ cluster.labels[KEY] }} or {{ cluster.claims[NAME] }}`}},
		{"patch without value", one(distv1alpha1.OverrideRule{JSONPatch: []distv1alpha1.JSONPatchOperation{{Op: "replace", Path: "/spec/replicas"}}}),
			[]string{"spec.overrides[0].jsonPatch: [0] replace /spec/replicas: needs a value"}},
		{"template inside a patch value", one(distv1alpha1.OverrideRule{JSONPatch: []distv1alpha1.JSONPatchOperation{{Op: "add", Path: "/x", Value: jsonValue(map[string]any{"a": "{{ oops }}"})}}}),
			[]string{`spec.overrides[0].jsonPatch: [0] add /x: template "{{ oops }}": want {{ cluster.name }}, {{ cluster.labels[KEY] }} or {{ cluster.claims[NAME] }}`}},
		{"weights selector", distv1alpha1.DistributionPolicySpec{Replicas: &distv1alpha1.ReplicaDivision{Type: distv1alpha1.Weighted, Weights: []distv1alpha1.ClusterWeight{{
			Clusters: distv1alpha1.ClusterSelector{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}}, Weight: 1}}}},
			[]string{`spec.replicas.weights[0].clusters: labelSelector: key: Invalid value: "bad key!"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Validate(tc.spec)
			if tc.want == nil {
				assert.Empty(t, got)
				return
			}
			assert.Len(t, got, len(tc.want), "%v", got)
			for i := range tc.want {
				if i < len(got) {
					assert.Contains(t, got[i], tc.want[i])
				}
			}
		})
	}
}
