package dryrun

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestPrintFormats(t *testing.T) {
	rep, err := Run(t.Context(), Options{
		PolicyFile: "testdata/mustnothave-named-present/policy.yaml",
		From:       []string{"testdata/mustnothave-named-present"},
		Now:        func() time.Time { return time.Unix(0, 0) },
	})
	require.NoError(t, err)
	for _, format := range []string{FormatJSON, FormatYAML} {
		var buf bytes.Buffer
		require.NoError(t, Print(&buf, rep, format))
		var back Report
		if format == FormatJSON {
			require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
		} else {
			require.NoError(t, yaml.UnmarshalStrict(buf.Bytes(), &back))
		}
		require.Len(t, back.Policies, 1)
		require.Equal(t, "NonCompliant; violation - secrets [legacy-token] found in namespace default", back.Policies[0].Message)
		require.Equal(t, "delete", string(back.Policies[0].Actions[0].Verb))
	}
	require.ErrorContains(t, Print(&bytes.Buffer{}, rep, "xml"), `unknown output format "xml"`)
}

// A Secret the policy would create is printed without its values.
func TestPrintRedactsSecrets(t *testing.T) {
	rep, err := Run(t.Context(), Options{PolicyFile: "testdata/secret-stringdata-matches-data/policy.yaml"})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, PrintText(&buf, rep))
	require.Contains(t, buf.String(), "password: (redacted)")
	require.False(t, strings.Contains(buf.String(), "hunter2"), buf.String())
}

func TestStdin(t *testing.T) {
	pol := "apiVersion: policy.open-cluster-management.io/v1\nkind: ConfigurationPolicy\nmetadata: {name: p}\nspec:\n" +
		"  object-templates:\n  - complianceType: musthave\n    objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: a}}\n"
	rep, err := Run(t.Context(), Options{PolicyFile: "-", Stdin: strings.NewReader(pol)})
	require.NoError(t, err)
	require.False(t, rep.Compliant())
	require.Equal(t, ExitNonCompliant, ExitCode(rep, nil))
}

func TestStdinOnlyOnce(t *testing.T) {
	_, err := Run(t.Context(), Options{PolicyFile: "-", From: []string{"-"}, Stdin: strings.NewReader("")})
	require.ErrorContains(t, err, "not both")
}
