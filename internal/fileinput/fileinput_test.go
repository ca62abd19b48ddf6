package fileinput

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.yaml")
	require.NoError(t, os.WriteFile(small, []byte("kind: ConfigMap\n"), 0o600))
	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, bytes.Repeat([]byte("a"), 2048+1), 0o600))
	exact := filepath.Join(dir, "exact.yaml")
	require.NoError(t, os.WriteFile(exact, bytes.Repeat([]byte("a"), 2048), 0o600))

	data, err := ReadFile(small, 2048, "manifest files")
	require.NoError(t, err)
	assert.Equal(t, "kind: ConfigMap\n", string(data))

	data, err = ReadFile(exact, 2048, "manifest files")
	require.NoError(t, err, "a file of exactly the limit is read")
	assert.Len(t, data, 2048)

	_, err = ReadFile(big, 2048, "manifest files")
	require.Error(t, err)
	assert.Equal(t, big+" is larger than 2 KiB (the limit for manifest files)", err.Error())
	assert.True(t, IsTooLarge(err))

	_, err = ReadFile(dir, 2048, "manifest files")
	assert.EqualError(t, err, dir+" is a directory, not a file")

	_, err = ReadFile(filepath.Join(dir, "missing"), 2048, "manifest files")
	assert.True(t, os.IsNotExist(err))
}

// TestReadFileDevZero: an endless device is refused after limit+1 bytes,
// not read until memory runs out (a hang would time the test out).
func TestReadFileDevZero(t *testing.T) {
	_, err := ReadFile("/dev/zero", ManifestLimit, "manifest files")
	require.Error(t, err)
	assert.Equal(t, "/dev/zero is larger than 8 MiB (the limit for manifest files)", err.Error())
}

func TestRead(t *testing.T) {
	data, err := Read(strings.NewReader("abc"), "standard input", 3, "policy files")
	require.NoError(t, err)
	assert.Equal(t, "abc", string(data))
	_, err = Read(strings.NewReader("abcd"), "standard input", 3, "policy files")
	assert.EqualError(t, err, "standard input is larger than 3 bytes (the limit for policy files)")
}

func TestBudget(t *testing.T) {
	b := &Budget{Limit: 10, What: "manifest files"}
	require.NoError(t, b.Take("a.yaml", 6))
	require.NoError(t, b.Take("b.yaml", 4))
	err := b.Take("c.yaml", 1)
	require.Error(t, err)
	assert.Equal(t, "too much input for manifest files: the files read so far, up to c.yaml, total more than 10 bytes", err.Error())
	assert.True(t, IsTooLarge(err))
}

func TestSize(t *testing.T) {
	assert.Equal(t, "8 MiB", Size(8<<20))
	assert.Equal(t, "500 KiB", Size(500<<10))
	assert.Equal(t, "1000 bytes", Size(1000))
}
