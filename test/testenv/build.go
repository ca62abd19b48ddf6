package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"flotilla.dev/flotilla/internal/image"
)

// BuildFlotilla builds, as `make build` does (static), the flotilla binary
// and the search agent's slim binary beside it (image.Build takes it from
// there) into dir, with extra `go build` flags, and returns flotilla's path.
// Output goes to the test's stderr.
func BuildFlotilla(dir string, flags ...string) (string, error) {
	for pkg, name := range map[string]string{
		"flotilla.dev/flotilla/cmd/flotilla":              "flotilla",
		"flotilla.dev/flotilla/cmd/flotilla-search-agent": image.SearchAgentBinary,
	} {
		args := append(append([]string{"build"}, flags...), "-o", filepath.Join(dir, name), pkg)
		build := exec.Command("go", args...)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return "", fmt.Errorf("build %s: %w", name, err)
		}
	}
	return filepath.Join(dir, "flotilla"), nil
}
