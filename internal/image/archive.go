package image

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Named is an image and the reference (registry/repository:tag) it is known by.
type Named struct {
	Ref   string
	Image v1.Image
}

// containerdNameAnnotation is how containerd's importer names an image of an
// OCI layout; org.opencontainers.image.ref.name carries the tag alone, as the
// OCI layout specification says.
const containerdNameAnnotation = "io.containerd.image.name"

// WriteArchive writes the images as one tar that is an OCI image layout
// (oci-layout, index.json, blobs/sha256/...) for `ctr images import` and also
// carries a docker manifest.json naming the same blobs, for `docker load`.
func WriteArchive(w io.Writer, images ...Named) error {
	blobs := map[string][]byte{} // "blobs/sha256/<hex>" -> content
	index := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}
	type dockerEntry struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	var docker []dockerEntry
	for _, n := range images {
		if err := checkRef(n.Ref); err != nil {
			return err
		}
		manifest, err := n.Image.RawManifest()
		if err != nil {
			return err
		}
		digest, err := n.Image.Digest()
		if err != nil {
			return err
		}
		mt, err := n.Image.MediaType()
		if err != nil {
			return err
		}
		blobs[blobPath(digest)] = manifest
		cfgName, err := n.Image.ConfigName()
		if err != nil {
			return err
		}
		cfg, err := n.Image.RawConfigFile()
		if err != nil {
			return err
		}
		blobs[blobPath(cfgName)] = cfg
		entry := dockerEntry{Config: blobPath(cfgName), RepoTags: []string{n.Ref}}
		layers, err := n.Image.Layers()
		if err != nil {
			return err
		}
		for _, l := range layers {
			d, err := l.Digest()
			if err != nil {
				return err
			}
			if _, ok := blobs[blobPath(d)]; !ok {
				rc, err := l.Compressed()
				if err != nil {
					return err
				}
				data, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					return err
				}
				blobs[blobPath(d)] = data
			}
			entry.Layers = append(entry.Layers, blobPath(d))
		}
		docker = append(docker, entry)
		index.Manifests = append(index.Manifests, v1.Descriptor{
			MediaType: mt, Digest: digest, Size: int64(len(manifest)),
			Annotations: map[string]string{
				containerdNameAnnotation:            n.Ref,
				"org.opencontainers.image.ref.name": n.Ref[strings.LastIndex(n.Ref, ":")+1:],
			},
		})
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return err
	}
	dockerJSON, err := json.Marshal(docker)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"oci-layout":    []byte(`{"imageLayoutVersion":"1.0.0"}`),
		"index.json":    indexJSON,
		"manifest.json": dockerJSON,
	}
	for p, b := range blobs {
		files[p] = b
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	epoch := time.Unix(0, 0)
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	for _, n := range names {
		data := files[n]
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// WriteArchiveFile writes the archive to path (through a temporary file, so a
// failure leaves no half-written archive).
func WriteArchiveFile(path string, images ...Named) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := WriteArchive(tmp, images...); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

// checkRef wants registry/repository:tag, which both importers can name the image by.
func checkRef(ref string) error {
	i := strings.LastIndex(ref, ":")
	if i <= 0 || strings.Contains(ref[i:], "/") || i == len(ref)-1 || !strings.Contains(ref[:i], "/") {
		return fmt.Errorf("image reference %q wants the form registry/repository:tag", ref)
	}
	return nil
}
