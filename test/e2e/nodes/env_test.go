//go:build nodes

package nodes_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// devEnv is one `flotilla dev up --nodes` environment of a test, with the
// host's state from before it.
type devEnv struct {
	dataDir string
	before  hostState
	downed  bool
}

// startEnv brings up an environment with nodes and clusters managed
// clusters in a fresh folder (short: the containerd socket path must stay under
// 108 characters); it is downed when the test ends unless the test did it.
func startEnv(t *testing.T, prefix string, clusters int) *devEnv {
	t.Helper()
	base, err := os.MkdirTemp("", prefix)
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	e := &devEnv{dataDir: filepath.Join(base, "env")}
	e.before, err = snapshot(e.dataDir)
	require.NoError(t, err)
	t.Cleanup(func() {
		if !e.downed {
			out, err := flotillaRun(t, "dev", "down", "--data-dir", e.dataDir)
			t.Logf("cleanup: dev down: %v\n%s", err, out)
		}
	})
	start := time.Now()
	out, err := flotillaRun(t, "dev", "up", "--nodes", "--clusters", strconv.Itoa(clusters), "--data-dir", e.dataDir)
	require.NoError(t, err, out)
	t.Logf("dev up --nodes --clusters %d took %s\n%s", clusters, time.Since(start).Round(time.Second), out)
	return e
}

// down runs `flotilla dev down` and checks that the host is as it was before
// the environment; it returns dev down's output.
func (e *devEnv) down(t *testing.T) string {
	t.Helper()
	out, err := flotillaRun(t, "dev", "down", "--data-dir", e.dataDir)
	e.downed = true
	require.NoError(t, err, out)
	after, err := snapshot(e.dataDir)
	require.NoError(t, err)
	assert.Empty(t, diff(e.before, after), "host changes left behind by dev down")
	assert.NoFileExists(t, filepath.Join(e.dataDir, "host.json"), "every recorded host change undone")
	return out
}
