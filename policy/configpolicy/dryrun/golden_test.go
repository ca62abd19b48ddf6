package dryrun

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/*/want.txt from the current output")

// TestGolden runs every testdata/<case>/ through the dry run: policy.yaml
// against the other YAML files of the folder, comparing the printed report
// and the exit code with want.txt. (testdata/fuzz holds the fuzz targets'
// regression inputs, not a case.)
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*")
	require.NoError(t, err)
	dirs = slices.DeleteFunc(dirs, func(d string) bool { return filepath.Base(d) == "fuzz" })
	require.GreaterOrEqual(t, len(dirs), 25, "golden cases")
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got := runCase(t, dir)
			want := filepath.Join(dir, "want.txt")
			if *update {
				require.NoError(t, os.WriteFile(want, got, 0o644))
			}
			exp, err := os.ReadFile(want)
			require.NoError(t, err, "run with -update to create it")
			require.Equal(t, string(exp), string(got))
		})
	}
}

func runCase(t *testing.T, dir string) []byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var from []string
	for _, e := range entries {
		switch e.Name() {
		case "policy.yaml", "want.txt":
		default:
			from = append(from, filepath.Join(dir, e.Name()))
		}
	}
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	rep, err := Run(t.Context(), Options{PolicyFile: filepath.Join(dir, "policy.yaml"), From: from, Now: now})
	var out bytes.Buffer
	if err != nil {
		fmt.Fprintf(&out, "error: %v\n", err)
	} else {
		require.NoError(t, PrintText(&out, rep))
	}
	fmt.Fprintf(&out, "exit code: %d\n", ExitCode(rep, err))
	return out.Bytes()
}
