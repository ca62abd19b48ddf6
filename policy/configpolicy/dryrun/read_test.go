package dryrun

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// TestReadersAreBounded: /dev/zero, an endless standard input and a big file
// are refused with a message naming the limit; a normal file is read.
func TestReadersAreBounded(t *testing.T) {
	_, _, err := ReadPolicies(nil, "/dev/zero")
	assert.EqualError(t, err, "/dev/zero is larger than 8 MiB (the limit for policy files)")

	_, err = ReadObjects(nil, "/dev/zero")
	assert.EqualError(t, err, "/dev/zero is larger than 8 MiB (the limit for object files)")

	endless := io.MultiReader(bytes.NewReader([]byte("kind: ConfigMap\n")), zeros{})
	_, _, err = ReadPolicies(endless, "-")
	assert.EqualError(t, err, "standard input is larger than 8 MiB (the limit for policy files)")

	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, bytes.Repeat([]byte("# comment\n"), 900_000), 0o600))
	_, _, err = ReadPolicies(nil, big)
	assert.EqualError(t, err, big+" is larger than 8 MiB (the limit for policy files)")

	ok := filepath.Join(dir, "ok.yaml")
	require.NoError(t, os.WriteFile(ok, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n"), 0o600))
	objs, err := ReadObjects(nil, ok)
	require.NoError(t, err)
	require.Len(t, objs, 1)
	assert.Equal(t, "a", objs[0].GetName())
}

// zeros is an endless reader.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 0
	}
	return len(p), nil
}

// Gatekeeper objects are audited offline only: with a live cluster, dryrun
// says where to audit them instead of skipping them silently.
func TestGatekeeperNeedsFromFiles(t *testing.T) {
	_, err := Run(t.Context(), Options{
		PolicyFile: filepath.Join("testdata", "gatekeeper-required-labels-in-policy", "policy.yaml"),
		Cluster:    &rest.Config{Host: "https://127.0.0.1:1"},
	})
	require.EqualError(t, err, filepath.Join("testdata", "gatekeeper-required-labels-in-policy", "policy.yaml")+
		" holds Gatekeeper ConstraintTemplates or constraints: dryrun audits them against --from files; on a cluster, `flotilla policy run` audits them")
}
