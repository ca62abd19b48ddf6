package generator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"flotilla.dev/flotilla/internal/scheme"
)

// TestUpstreamGoldens generates every case under testdata/<group>/<case>/
// and compares the objects, field by field and in order, with want.yaml:
// upstream's generator output for the same configuration (record.sh,
// README.md). A case upstream refuses (upstream-error.txt) must be refused
// too, with a message naming the offending field (want-error.txt holds a
// fragment of ours).
func TestUpstreamGoldens(t *testing.T) {
	cases, err := filepath.Glob("testdata/*/*")
	require.NoError(t, err)
	n := 0
	for _, dir := range cases {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			continue
		}
		n++
		t.Run(dir, func(t *testing.T) {
			configs, err := Configs(dir)
			require.NoError(t, err)
			require.Len(t, configs, 1)
			got, err := File(configs[0], Options{})
			if want, rerr := os.ReadFile(filepath.Join(dir, "want-error.txt")); rerr == nil {
				require.Error(t, err, "upstream refuses this configuration")
				require.Contains(t, err.Error(), strings.TrimSpace(string(want)))
				return
			}
			require.NoError(t, err)
			want, err := os.ReadFile(filepath.Join(dir, "want.yaml"))
			require.NoError(t, err, "no want.yaml: run record.sh")
			wantObjs, err := decodeDocuments(want, "want.yaml")
			require.NoError(t, err)
			compareObjects(t, wantObjs, normalize(t, got))
		})
	}
	require.NotZero(t, n)
}

// compareObjects reports, per object, the fields that differ.
func compareObjects(t *testing.T, want, got []map[string]any) {
	t.Helper()
	ids := func(objs []map[string]any) []string {
		out := make([]string, len(objs))
		for i, o := range objs {
			out[i] = identity(o)
		}
		return out
	}
	require.Equal(t, ids(want), ids(got), "the objects and their order")
	for i := range want {
		if d := cmp.Diff(want[i], got[i]); d != "" {
			t.Errorf("%s differs from upstream (-upstream +flotilla):\n%s", identity(want[i]), d)
		}
	}
}

func identity(o map[string]any) string {
	meta, _ := o["metadata"].(map[string]any)
	return fmt.Sprintf("%v %v/%v", o["kind"], meta["namespace"], meta["name"])
}

// normalize takes objects through JSON, as they are written, so numbers
// compare as json.Number on both sides.
func normalize(t *testing.T, objs []map[string]any) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, objs))
	out, err := decodeDocuments(buf.Bytes(), "output")
	require.NoError(t, err)
	return out
}

// TestGoldensDecodeStrictly: every object generated from the goldens decodes
// strictly into the types the hub serves (Policy, PolicySet,
// PlacementBinding, Placement), so no generated field is one Flotilla drops.
func TestGoldensDecodeStrictly(t *testing.T) {
	codecs := serializer.NewCodecFactory(scheme.New(), serializer.EnableStrict)
	cases, err := filepath.Glob("testdata/*/*/want.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	for _, want := range cases {
		got, err := File(filepath.Join(filepath.Dir(want), mustConfig(t, filepath.Dir(want))), Options{})
		require.NoError(t, err)
		for _, o := range got {
			raw, err := json.Marshal(o)
			require.NoError(t, err)
			_, _, err = codecs.UniversalDeserializer().Decode(raw, nil, nil)
			require.NoError(t, err, "%s: %s", want, identity(o))
		}
	}
}

func mustConfig(t *testing.T, dir string) string {
	t.Helper()
	configs, err := Configs(dir)
	require.NoError(t, err)
	return filepath.Base(configs[0])
}

// TestKustomizeGoldens builds every case with a kustomization as `flotilla
// policy generate DIR` does (Kustomize) and compares the objects with
// want-kustomize.yaml: `kustomize build --enable-alpha-plugins` of the same
// directory with upstream's generator installed as kustomize's exec plugin
// (record.sh). policy-collection's kustomizations add the policy-set label.
func TestKustomizeGoldens(t *testing.T) {
	cases, err := filepath.Glob("testdata/*/*/want-kustomize.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	for _, want := range cases {
		dir := filepath.Dir(want)
		t.Run(dir, func(t *testing.T) {
			got, err := Kustomize(dir)
			require.NoError(t, err)
			data, err := os.ReadFile(want)
			require.NoError(t, err)
			wantObjs, err := decodeDocuments(data, want)
			require.NoError(t, err)
			compareObjects(t, wantObjs, normalize(t, got))
		})
	}
}
