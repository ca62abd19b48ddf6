package printer

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type item struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
}

func TestPrintFormats(t *testing.T) {
	obj := []item{{Name: "cluster1", Ready: true}, {Name: "cluster22", Ready: false}}
	table := func() Rows {
		r := Rows{Header: []string{"NAME", "READY"}}
		for _, i := range obj {
			r.Add(i.Name, map[bool]string{true: "True", false: "False"}[i.Ready])
		}
		return r
	}
	cases := map[string]string{
		Table: "NAME        READY\ncluster1    True\ncluster22   False\n",
		JSON:  "[\n  {\n    \"name\": \"cluster1\",\n    \"ready\": true\n  },\n  {\n    \"name\": \"cluster22\",\n    \"ready\": false\n  }\n]\n",
		YAML:  "- name: cluster1\n  ready: true\n- name: cluster22\n  ready: false\n",
	}
	for format, want := range cases {
		var buf bytes.Buffer
		require.NoError(t, Print(&buf, format, obj, table), format)
		assert.Equal(t, want, buf.String(), format)
	}
}

func TestUnknownFormat(t *testing.T) {
	err := Print(&bytes.Buffer{}, "xml", nil, func() Rows { return Rows{} })
	assert.EqualError(t, err, `unknown output format "xml": use table, json or yaml`)
}
