package distribute

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestExpand(t *testing.T) {
	c := Cluster{Name: "eu-1", Labels: map[string]string{"region": "eu", "topology.kubernetes.io/zone": "eu-west-1a"},
		Claims: map[string]string{"id.k8s.io": "abc"}}
	tests := []struct {
		in, want, err string
	}{
		{in: "plain", want: "plain"},
		{in: "{{ cluster.name }}", want: "eu-1"},
		{in: "{{cluster.name}}-x", want: "eu-1-x"},
		{in: "registry.{{ cluster.labels[region] }}.example.com", want: "registry.eu.example.com"},
		{in: "{{ cluster.labels[topology.kubernetes.io/zone] }}", want: "eu-west-1a"},
		{in: "{{ cluster.claims[id.k8s.io] }}/{{ cluster.name }}", want: "abc/eu-1"},
		{in: "{{ cluster.labels[tier] }}", err: `template {{ cluster.labels[tier] }}: cluster eu-1 has no label "tier"`},
		{in: "{{ cluster.claims[platform.open-cluster-management.io] }}", err: `cluster eu-1 has no ClusterClaim "platform.open-cluster-management.io"`},
		{in: "{{ cluster.namespace }}", err: `template "{{ cluster.namespace }}": want {{ cluster.name }}`},
		{in: "{{ .Name }}", err: "want {{ cluster.name }}, {{ cluster.labels[KEY] }} or {{ cluster.claims[NAME] }}"},
		{in: "a {{ cluster.name", err: `template "{{ cluster.name"`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Expand(tc.in, c)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestCheckTemplate(t *testing.T) {
	assert.NoError(t, CheckTemplate("{{ cluster.labels[missing] }}"), "syntax only: a label no cluster has yet is fine")
	assert.NoError(t, CheckTemplate("no template"))
	assert.Error(t, CheckTemplate("{{ cluster.labels[] }}"))
	assert.Error(t, CheckTemplate("{{ env.HOME }}"))
}
