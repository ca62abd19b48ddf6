package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// staticBinary builds a tiny static Go program to stand in for flotilla,
// with a copy beside it standing in for flotilla-search-agent.
func staticBinary(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\nfunc main() {}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module tiny\n\ngo 1.22\n"), 0o644))
	cmd := exec.Command("go", "build", "-o", "tiny", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	bin, err := os.ReadFile(filepath.Join(dir, "tiny"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, SearchAgentBinary), bin, 0o755))
	return filepath.Join(dir, "tiny")
}

func archive(t *testing.T, bin, ref string) ([]byte, v1.Hash) {
	t.Helper()
	img, err := Build(Options{Binary: bin})
	require.NoError(t, err)
	d, err := img.Digest()
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, WriteArchive(&buf, Named{Ref: ref, Image: img}))
	return buf.Bytes(), d
}

func TestBuildIsReproducible(t *testing.T) {
	bin := staticBinary(t)
	a, da := archive(t, bin, Ref("", "v1"))
	b, db := archive(t, bin, Ref("", "v1"))
	assert.Equal(t, da, db, "same binary, same image digest")
	assert.Equal(t, sha256.Sum256(a), sha256.Sum256(b), "same binary, byte-identical archive")
}

func TestImageRunsAsNonRootFromScratch(t *testing.T) {
	img, err := Build(Options{Binary: staticBinary(t), Args: []string{"pause"}})
	require.NoError(t, err)
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "65532:65532", cfg.Config.User)
	assert.Equal(t, []string{"/flotilla", "pause"}, cfg.Config.Entrypoint)
	assert.Equal(t, "linux", cfg.OS)
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1, "FROM scratch: one layer, ours")
	rc, err := layers[0].Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	files := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		files[h.Name] = h
	}
	for _, bin := range []string{"flotilla", SearchAgentBinary} {
		require.Contains(t, files, bin)
		assert.Equal(t, int64(0o755), files[bin].Mode, bin)
	}
	assert.Contains(t, files, "etc/passwd")
	for name, h := range files {
		assert.Equal(t, int64(0), h.ModTime.Unix(), "%s has a fixed time", name)
	}
}

func TestBuildRefusesDynamicBinary(t *testing.T) {
	for _, p := range []string{"/bin/sh", "/usr/bin/env"} {
		if _, err := os.Stat(p); err == nil {
			_, err := Build(Options{Binary: p})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "CGO_ENABLED=0")
			return
		}
	}
	t.Fatal("no dynamically linked program found on this machine to test with")
}

// TestBuildNeedsTheSearchAgent: an image without the search agent's binary
// would deliver search agent Pods that cannot start, so none is built.
func TestBuildNeedsTheSearchAgent(t *testing.T) {
	bin := staticBinary(t)
	_, err := Build(Options{Binary: bin, SearchAgent: filepath.Join(t.TempDir(), SearchAgentBinary)})
	require.ErrorContains(t, err, "make build")
	require.NoError(t, os.Remove(filepath.Join(filepath.Dir(bin), SearchAgentBinary)))
	_, err = Build(Options{Binary: bin})
	require.ErrorContains(t, err, SearchAgentBinary)
}

func TestBuildRefusesNonExecutable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "script")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755))
	_, err := Build(Options{Binary: p})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a Linux executable")
}

// TestArchiveLayout reads the archive as both importers do: the OCI layout's
// index.json (ctr images import) and docker's manifest.json (docker load) must
// name the same image, and every blob must match its digest.
func TestArchiveLayout(t *testing.T) {
	ref := Ref("ghcr.io/flotilla-dev", "v1.2.3")
	data, digest := archive(t, staticBinary(t), ref)
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			files[h.Name] = b
		}
	}
	assert.JSONEq(t, `{"imageLayoutVersion":"1.0.0"}`, string(files["oci-layout"]))
	for name, b := range files {
		if filepath.Dir(name) == "blobs/sha256" {
			sum := sha256.Sum256(b)
			assert.Equal(t, filepath.Base(name), hex.EncodeToString(sum[:]), "blob %s matches its digest", name)
		}
	}

	var index v1.IndexManifest
	require.NoError(t, json.Unmarshal(files["index.json"], &index))
	require.Len(t, index.Manifests, 1)
	m := index.Manifests[0]
	assert.Equal(t, digest, m.Digest)
	assert.Equal(t, ref, m.Annotations["io.containerd.image.name"])
	assert.Equal(t, "v1.2.3", m.Annotations["org.opencontainers.image.ref.name"])
	manifest, err := v1.ParseManifest(bytes.NewReader(files["blobs/sha256/"+m.Digest.Hex]))
	require.NoError(t, err)

	var docker []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	require.NoError(t, json.Unmarshal(files["manifest.json"], &docker))
	require.Len(t, docker, 1)
	assert.Equal(t, []string{ref}, docker[0].RepoTags)
	assert.Equal(t, "blobs/sha256/"+manifest.Config.Digest.Hex, docker[0].Config)
	require.Len(t, docker[0].Layers, len(manifest.Layers))
	for i, l := range manifest.Layers {
		assert.Equal(t, "blobs/sha256/"+l.Digest.Hex, docker[0].Layers[i])
		assert.Contains(t, files, docker[0].Layers[i])
	}
}

func TestWriteArchiveRefusesBadRef(t *testing.T) {
	img, err := Build(Options{Binary: staticBinary(t)})
	require.NoError(t, err)
	for _, ref := range []string{"flotilla", "flotilla:v1", "ghcr.io/flotilla-dev/flotilla", "ghcr.io/x/flotilla:"} {
		err := WriteArchive(io.Discard, Named{Ref: ref, Image: img})
		assert.Error(t, err, ref)
	}
}

// TestArchiveLoadsAsDockerArchive reads the archive with go-containerregistry's
// docker-archive reader (what `docker load` reads: manifest.json, RepoTags) and
// finds the same image.
func TestArchiveLoadsAsDockerArchive(t *testing.T) {
	ref := Ref("ghcr.io/flotilla-dev", "v1.2.3")
	img, err := Build(Options{Binary: staticBinary(t)})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "image.tar")
	require.NoError(t, WriteArchiveFile(path, Named{Ref: ref, Image: img}))
	tag, err := name.NewTag(ref)
	require.NoError(t, err)
	loaded, err := tarball.ImageFromPath(path, &tag)
	require.NoError(t, err)
	wantCfg, err := img.ConfigName()
	require.NoError(t, err)
	gotCfg, err := loaded.ConfigName()
	require.NoError(t, err)
	assert.Equal(t, wantCfg, gotCfg, "same image config (the image ID docker shows)")
	wantLayers, err := img.Layers()
	require.NoError(t, err)
	gotLayers, err := loaded.Layers()
	require.NoError(t, err)
	require.Len(t, gotLayers, len(wantLayers))
	for i := range wantLayers {
		w, _ := wantLayers[i].DiffID()
		g, err := gotLayers[i].DiffID()
		require.NoError(t, err)
		assert.Equal(t, w, g)
	}
}
