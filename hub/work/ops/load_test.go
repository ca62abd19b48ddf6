package ops

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	workv1 "open-cluster-management.io/api/work/v1"
)

func names(t *testing.T, ms []workv1.Manifest) []string {
	var out []string
	for _, m := range ms {
		var o struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		require.NoError(t, json.Unmarshal(m.Raw, &o))
		out = append(out, o.Kind+"/"+o.Metadata.Name)
	}
	return out
}

func TestDecode(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []string
		wantErr string
	}{
		{"one yaml object", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", []string{"ConfigMap/a"}, ""},
		{"several documents, empty and comment-only ones skipped",
			"---\n# leading comment\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n---\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\n",
			[]string{"Namespace/ns", "ConfigMap/a"}, ""},
		{"json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j"}}`, []string{"ConfigMap/j"}, ""},
		{"list is expanded",
			"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: Secret, metadata: {name: b}}\n",
			[]string{"ConfigMap/a", "Secret/b"}, ""},
		{"missing name", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n---\n", nil, "in.yaml: document 1: every object needs apiVersion, kind and metadata.name"},
		{"broken yaml names the document", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: [unclosed\n", nil, "in.yaml: document 2"},
		{"not an object", "- a\n- b\n", nil, "in.yaml: document 1 is not an object"},
		{"nothing", "", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(strings.NewReader(tc.in), "in.yaml")
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, names(t, got))
		})
	}
}

func TestLoadManifests(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	write("b.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")
	write("a.json", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}`)
	write("notes.txt", "not a manifest")
	single := write("c.yml", "apiVersion: v1\nkind: Secret\nmetadata: {name: c}\n")

	got, err := LoadManifests(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"Namespace/a", "ConfigMap/b", "Secret/c"}, names(t, got), "directory files in name order, .txt ignored")

	got, err = LoadManifests(single)
	require.NoError(t, err)
	assert.Equal(t, []string{"Secret/c"}, names(t, got))

	_, err = LoadManifests()
	assert.ErrorContains(t, err, "no manifest file given")
	_, err = LoadManifests(filepath.Join(dir, "missing.yaml"))
	assert.ErrorContains(t, err, "missing.yaml")
	empty := t.TempDir()
	_, err = LoadManifests(empty)
	assert.ErrorContains(t, err, "has no .yaml, .yml or .json files")
	blank := write("blank.yaml", "# nothing\n")
	_, err = LoadManifests(blank)
	assert.ErrorContains(t, err, "no Kubernetes objects found")
}

// TestLoadManifestsIsBounded: /dev/zero and a big file are refused with a
// message naming the limit, without reading them whole.
func TestLoadManifestsIsBounded(t *testing.T) {
	_, err := LoadManifests("/dev/zero")
	assert.EqualError(t, err, "/dev/zero is larger than 8 MiB (the limit for manifest files)")

	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat("# comment\n", 900_000)), 0o600))
	_, err = LoadManifests(big)
	assert.EqualError(t, err, big+" is larger than 8 MiB (the limit for manifest files)")

	// Many files under the per-file limit still meet the total limit.
	many := t.TempDir()
	chunk := []byte(strings.Repeat("# comment\n", 700_000)) // 7 MB
	for i := 0; i < 10; i++ {
		require.NoError(t, os.WriteFile(filepath.Join(many, string(rune('a'+i))+".yaml"), chunk, 0o600))
	}
	_, err = LoadManifests(many)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "too much input for manifest files: the files read so far, up to "+filepath.Join(many, "j.yaml")+", total more than 64 MiB")
}
