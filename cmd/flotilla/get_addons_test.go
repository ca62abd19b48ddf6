package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"flotilla.dev/flotilla/addons/ops"
)

func addonRows() []ops.Row {
	return []ops.Row{
		{Name: "example", Cluster: "cluster1", Available: "True", Degraded: "False", Progressing: "False"},
		{Name: "governance", Message: "enabled on no cluster"},
	}
}

func TestPrintAddonsTable(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, printAddons(&out, "table", addonRows(), false))
	assert.Equal(t, ""+
		"NAME         CLUSTER    AVAILABLE   DEGRADED   PROGRESSING\n"+
		"example      cluster1   True        False      False\n"+
		"governance   -          -           -          -\n", out.String())

	out.Reset()
	require.NoError(t, printAddons(&out, "table", addonRows()[:1], true))
	assert.Equal(t, ""+
		"NAME      AVAILABLE   DEGRADED   PROGRESSING\n"+
		"example   True        False      False\n", out.String(), "one cluster: clusteradm's columns")
}

func TestPrintAddonsJSONAndYAML(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, printAddons(&out, "json", addonRows(), false))
	var rows []ops.Row
	require.NoError(t, json.Unmarshal(out.Bytes(), &rows))
	assert.Equal(t, addonRows(), rows)

	out.Reset()
	require.NoError(t, printAddons(&out, "yaml", nil, false))
	require.NoError(t, yaml.Unmarshal(out.Bytes(), &rows))
	assert.Empty(t, rows)
}

func TestParseAnnotations(t *testing.T) {
	got, err := parseAnnotations([]string{"a=1", "b=x=y"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "1", "b": "x=y"}, got)
	_, err = parseAnnotations([]string{"novalue"})
	assert.ErrorContains(t, err, `--annotate "novalue" is not key=value`)
}
