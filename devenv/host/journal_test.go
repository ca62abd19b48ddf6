package host

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJournalUndoesInReverse makes changes that need no root (directories,
// files, symlinks), reopens the journal as `dev down` would, and undoes them:
// a directory made before its files is removed after them.
func TestJournalUndoesInReverse(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "data", "host.json")
	j, err := Open(path)
	require.NoError(t, err)

	existing := filepath.Join(root, "existing")
	require.NoError(t, os.Mkdir(existing, 0o755))
	require.NoError(t, j.EnsureDir(existing), "an existing directory is not ours")
	cache := filepath.Join(root, "cache")
	require.NoError(t, j.EnsureDir(cache))
	require.NoError(t, j.Files(filepath.Join(cache, "net-1-*")))
	logs := filepath.Join(root, "logs")
	require.NoError(t, j.EnsureDir(logs))
	require.NoError(t, j.Symlinks(logs, filepath.Join(root, "data", "pod-logs")))
	require.NoError(t, j.EnsureDir(cache), "recorded once")

	// What others make for the environment, and what is not the environment's.
	for _, f := range []string{"net-1-abc", "net-1-def", "net-2-xyz"} {
		require.NoError(t, os.WriteFile(filepath.Join(cache, f), nil, 0o644))
	}
	require.NoError(t, os.Symlink(filepath.Join(root, "data", "pod-logs", "a.log"), filepath.Join(logs, "a.log")))
	require.NoError(t, os.Symlink("/elsewhere/b.log", filepath.Join(logs, "b.log")))

	again, err := Open(path)
	require.NoError(t, err)
	assert.Len(t, again.Changes, 4)
	require.NoError(t, again.Undo())

	assert.NoFileExists(t, filepath.Join(cache, "net-1-abc"))
	assert.FileExists(t, filepath.Join(cache, "net-2-xyz"), "another network's file stays")
	assert.DirExists(t, cache, "a directory that is not empty stays")
	_, err = os.Lstat(filepath.Join(logs, "a.log"))
	assert.True(t, os.IsNotExist(err), "our symlink removed")
	_, err = os.Lstat(filepath.Join(logs, "b.log"))
	assert.NoError(t, err, "someone else's symlink stays")
	assert.DirExists(t, existing)
	assert.NoFileExists(t, path, "nothing left to undo: the journal is gone")
}

func TestJournalRefusesDamagedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "host.json")
	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o644))
	_, err := Open(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "damaged")
}

func TestUnescapeMount(t *testing.T) {
	assert.Equal(t, "/a b/c", unescapeMount(`/a\040b/c`))
	assert.Equal(t, "/plain", unescapeMount("/plain"))
}

// dev down undoes, as root, what the journal records: a journal others could
// have written is refused before anything is read from it.
func TestJournalRefusesAWritableFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "host.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"changes":[]}`), 0o644))
	require.NoError(t, os.Chmod(path, 0o666))
	_, err := Open(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "writable by group or others")

	require.NoError(t, os.Chmod(path, 0o644))
	require.NoError(t, os.Chmod(dir, 0o777))
	_, err = Open(path)
	require.Error(t, err, "a folder others may write is refused too")

	require.NoError(t, os.Chmod(dir, 0o700))
	_, err = Open(path)
	require.NoError(t, err)
}
