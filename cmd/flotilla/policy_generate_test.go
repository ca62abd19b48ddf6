package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/kustomize/api/krusty"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"flotilla.dev/flotilla/internal/scheme"
)

var generatorTestdata = filepath.Join("..", "..", "policy", "generator", "testdata")

// `policy generate DIR` prints the acm-hardening set as YAML documents that
// decode strictly into Flotilla's (OCM's) types: every field is one the hub
// serves.
func TestPolicyGenerateYAML(t *testing.T) {
	out, stderr, code := runPolicyCLI(t, "policy", "generate", filepath.Join(generatorTestdata, "policy-collection", "acm-hardening"))
	require.Equal(t, 0, code, stderr)
	codecs := serializer.NewCodecFactory(scheme.New(), serializer.EnableStrict)
	kinds := map[string]int{}
	for _, doc := range strings.Split(out, "---\n")[1:] {
		obj, gvk, err := codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		require.NoError(t, err, doc)
		require.NotNil(t, obj)
		kinds[gvk.Kind]++
	}
	require.Equal(t, map[string]int{"Policy": 4, "PolicySet": 1, "Placement": 1, "PlacementBinding": 1}, kinds)
}

// -o json is one v1 List; a bad format, a missing path and a refused
// configuration exit 1 with the reason.
func TestPolicyGenerateOutputsAndErrors(t *testing.T) {
	set := filepath.Join(generatorTestdata, "policy-collection", "gatekeeper")
	out, _, code := runPolicyCLI(t, "policy", "generate", set, "-o", "json")
	require.Equal(t, 0, code)
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Equal(t, "List", list.Kind)
	require.Len(t, list.Items, 15)

	_, _, code = runPolicyCLI(t, "policy", "generate", set, "-o", "table")
	require.Equal(t, 1, code)
	_, _, code = runPolicyCLI(t, "policy", "generate")
	require.Equal(t, 1, code, "a path is required")
	_, _, code = runPolicyCLI(t, "policy", "generate", filepath.Join(set, "nope"))
	require.Equal(t, 1, code)

	cmd := newRootCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetArgs([]string{"policy", "generate", filepath.Join(generatorTestdata, "policy-collection", "zts-xcrypt")})
	err := cmd.Execute()
	require.ErrorContains(t, err, `policyGenerator.yaml: invalid PolicyGenerator: line 12: unknown field "placementRulePath" in placement`)
}

// Called as PolicyGenerator (kustomize's exec plugin name), flotilla
// generates from the configuration file it is given, with paths relative to
// its working directory (the kustomization's), as kustomize runs plugins.
func TestPolicyGeneratorPlugin(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join(generatorTestdata, "policy-collection", "acm-hardening"))
	require.NoError(t, err)
	config, err := os.ReadFile(filepath.Join(dir, "policyGenerator.yaml"))
	require.NoError(t, err)
	// kustomize hands the plugin a copy of its configuration in a temporary file.
	tmp := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(tmp, config, 0o600))
	t.Chdir(dir)
	var out bytes.Buffer
	ran, err := runAsPlugin([]string{"/somewhere/PolicyGenerator", tmp}, &out)
	require.True(t, ran)
	require.NoError(t, err)
	cli, _, code := runPolicyCLI(t, "policy", "generate", "policyGenerator.yaml")
	require.Equal(t, 0, code)
	require.Equal(t, cli, out.String(), "the plugin writes what the CLI writes")
	first := strings.Split(out.String(), "---\n")[1]
	var obj map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(first), &obj))
	require.Equal(t, "Policy", obj["kind"])
	require.Equal(t, 7, strings.Count(out.String(), "---\n"))

	ran, _ = runAsPlugin([]string{"/usr/bin/flotilla", "policy"}, &out)
	require.False(t, ran, "flotilla by its own name is the CLI")
	ran, err = runAsPlugin([]string{"PolicyGenerator"}, &out)
	require.True(t, ran)
	require.ErrorContains(t, err, "usage: PolicyGenerator <policy-generator-config-file>")
}

// TestMain lets this test binary be kustomize's PolicyGenerator exec plugin
// (TestKustomizeRunsFlotillaAsPlugin): called by that name, it is the plugin.
func TestMain(m *testing.M) {
	if ran, err := runAsPlugin(os.Args, os.Stdout); ran {
		if err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// kustomize's own build (krusty with exec plugins, as kustomize build
// --enable-alpha-plugins), with flotilla installed as the PolicyGenerator
// plugin, writes for policy-collection's sets exactly the bytes it writes
// with upstream's plugin (want-kustomize.yaml, recorded that way).
func TestKustomizeRunsFlotillaAsPlugin(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	home := t.TempDir()
	dir := filepath.Join(home, "kustomize", "plugin", "policy.open-cluster-management.io", "v1", "policygenerator")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.Symlink(self, filepath.Join(dir, pluginName)))
	t.Setenv("XDG_CONFIG_HOME", home)
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = kusttypes.EnabledPluginConfig(kusttypes.BploUseStaticallyLinked)
	opts.PluginConfig.FnpLoadingOptions.EnableExec = true
	for _, set := range []string{"acm-hardening", "gatekeeper", "openshift-plus"} {
		setDir, err := filepath.Abs(filepath.Join(generatorTestdata, "policy-collection", set))
		require.NoError(t, err)
		res, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), setDir)
		require.NoError(t, err, set)
		got, err := res.AsYaml()
		require.NoError(t, err)
		want, err := os.ReadFile(filepath.Join(setDir, "want-kustomize.yaml"))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), set)
	}
}
