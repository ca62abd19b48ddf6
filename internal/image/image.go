package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// DefaultRegistry is where released images live; a locally built image
	// carries the same name so that manifests need no change.
	DefaultRegistry = "ghcr.io/flotilla-dev"
	// Repository is the image's name below the registry.
	Repository = "flotilla"
	// BinaryPath is where the flotilla binary sits in the image.
	BinaryPath = "/flotilla"
	// SearchAgentBinary is the slim binary of the search addon's agent
	// (cmd/flotilla-search-agent): `flotilla addon-agent search` alone, a
	// third of flotilla's memory. `make build` puts it beside flotilla and
	// the image at /SearchAgentBinary, which the addon's Pods run.
	SearchAgentBinary = "flotilla-search-agent"
	// UID and GID of the user the image runs as (not root).
	UID = 65532
	GID = 65532
)

// Ref names the flotilla image of a registry and version:
// Ref("ghcr.io/flotilla-dev", "v0.3.0") is ghcr.io/flotilla-dev/flotilla:v0.3.0.
func Ref(registry, version string) string {
	if registry == "" {
		registry = DefaultRegistry
	}
	if version == "" {
		version = "latest"
	}
	return registry + "/" + Repository + ":" + version
}

// Options shape one image. Zero values take the documented defaults.
type Options struct {
	// Binary is the path of the flotilla binary to put in the image. It must be
	// statically linked (CGO_ENABLED=0): the image has no C library. Required.
	Binary string
	// SearchAgent is the path of the static flotilla-search-agent binary.
	// Default: SearchAgentBinary beside Binary; Build fails when there is none,
	// since the search addon's Pods would not start.
	SearchAgent string
	// Args follow the binary in the entrypoint. Default none: the image runs
	// `flotilla` and a Pod's args choose the subcommand.
	Args []string
	// Created is the image's creation time and every file's time. Default the
	// Unix epoch, so that the same binary gives the same digest.
	Created time.Time
}

// Build makes the image: FROM scratch, one layer, user 65532.
func Build(o Options) (v1.Image, error) {
	if o.Binary == "" {
		return nil, errors.New("image: no binary given")
	}
	if err := checkStatic(o.Binary); err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	if o.SearchAgent == "" {
		o.SearchAgent = filepath.Join(filepath.Dir(o.Binary), SearchAgentBinary)
	}
	if err := checkStatic(o.SearchAgent); err != nil {
		return nil, fmt.Errorf("%w (`make build` builds both %s and %s)", err, filepath.Base(o.Binary), SearchAgentBinary)
	}
	agent, err := os.ReadFile(o.SearchAgent)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	created := o.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	layerTar, err := rootfs(bin, agent, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Created:   v1.Time{Time: created},
		CreatedBy: "flotilla image: " + BinaryPath,
		Comment:   "the static flotilla and " + SearchAgentBinary + " binaries and their non-root user",
	}})
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture = "amd64"
	if arch, ok := elfArch(o.Binary); ok {
		cfg.Architecture = arch
	}
	cfg.OS = "linux"
	cfg.Created = v1.Time{Time: created}
	cfg.Config.Entrypoint = append([]string{BinaryPath}, o.Args...)
	cfg.Config.User = fmt.Sprintf("%d:%d", UID, GID)
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"PATH=/"}
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.source": "https://github.com/flotilla-dev/flotilla"}
	return mutate.ConfigFile(img, cfg)
}

// rootfs is the layer: /etc/passwd and /etc/group naming the non-root user, a
// writable /tmp, and the binaries. Entries are in a fixed order with fixed
// times.
func rootfs(bin, searchAgent []byte, mtime time.Time) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, GID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)
	entries := []struct {
		name string
		mode int64
		dir  bool
		data []byte
	}{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "flotilla", mode: 0o755, data: bin},
		{name: SearchAgentBinary, mode: 0o755, data: searchAgent},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: mtime, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(e.data))}
		if e.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if e.name == "home/nonroot/" {
			h.Uid, h.Gid = UID, GID
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// checkStatic refuses a dynamically linked binary, which cannot run FROM scratch.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("image: %s is not a Linux executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("image: %s is dynamically linked and cannot run in an image without a C library: build it with CGO_ENABLED=0 (`make image` does)", path)
		}
	}
	return nil
}

func elfArch(path string) (string, bool) {
	f, err := elf.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", true
	case elf.EM_AARCH64:
		return "arm64", true
	}
	return "", false
}

// CheckRef says what is wrong with ref as an image reference to run
// (registry/repository[:tag][@digest], as a Pod's image field takes it).
func CheckRef(ref string) error {
	if ref == "" {
		return errors.New("the image reference is empty")
	}
	if _, err := name.ParseReference(ref); err != nil {
		return fmt.Errorf("%q is not an image reference (registry/repository:tag): %v", ref, err)
	}
	return nil
}
