package devenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An environment made without nodes cannot gain them: its control planes'
// certificates and addresses are 127.0.0.1 only.
func TestUpRefusesNodesOnAnEnvironmentWithout(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "env.json"), []byte(`{"clusters":["cluster1"]}`), 0o644))
	_, err := Up(context.Background(), Options{DataDir: dir, Nodes: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "made without nodes")
	assert.NoFileExists(t, filepath.Join(dir, "host.json"), "nothing changed on the host")
}

func TestNodeIndex(t *testing.T) {
	rec := &record{Clusters: []string{"cluster1", "cluster2"}}
	assert.Equal(t, 0, nodeIndex(rec, hubName))
	assert.Equal(t, 1, nodeIndex(rec, "cluster1"))
	assert.Equal(t, 2, nodeIndex(rec, "cluster2"))
}
