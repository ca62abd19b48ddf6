package generator

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// resolved parses and resolves a configuration and gives each manifest the
// objects in objs (by path), as Load would.
func resolved(t *testing.T, yaml string, objs map[string][]map[string]any) *Config {
	t.Helper()
	cfg, err := Parse([]byte(head+yaml), "gen.yaml")
	require.NoError(t, err)
	require.NoError(t, cfg.Resolve())
	for i := range cfg.Policies {
		for j := range cfg.Policies[i].Manifests {
			m := &cfg.Policies[i].Manifests[j]
			m.objects = objs[m.Path]
		}
	}
	return cfg
}

func configMap(name string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "default"}}
}

func byKind(objs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, o := range objs {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}

func nameOf(o map[string]any) string { return o["metadata"].(map[string]any)["name"].(string) }

// TestGenerate covers what the upstream goldens do not: Flotilla's choices
// where upstream's output is unusable, and refusals of manifests.
func TestGenerate(t *testing.T) {
	cm := map[string][]map[string]any{"cm.yaml": {configMap("a")}}
	for _, tc := range []struct {
		name    string
		yaml    string
		objs    map[string][]map[string]any
		wantErr string
		check   func(t *testing.T, objs []map[string]any)
	}{{
		name: "a lone policy set's binding is named after it",
		yaml: "policyDefaults:\n  namespace: p\n  policySets: [s]\npolicies:\n- name: a\n  manifests:\n  - path: cm.yaml\n",
		objs: cm,
		check: func(t *testing.T, objs []map[string]any) {
			b := byKind(objs, "PlacementBinding")
			require.Len(t, b, 1)
			require.Equal(t, "binding-s", nameOf(b[0]))
			require.Equal(t, "placement-s", b[0]["placementRef"].(map[string]any)["name"])
		},
	}, {
		name: "clusterSelectors is read as labelSelector",
		yaml: "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  placement:\n    clusterSelectors:\n      cloud: aws\n  manifests:\n  - path: cm.yaml\n",
		objs: cm,
		check: func(t *testing.T, objs []map[string]any) {
			pl := byKind(objs, "Placement")
			require.Len(t, pl, 1)
			pred := pl[0]["spec"].(map[string]any)["predicates"].([]any)[0].(map[string]any)
			sel := pred["requiredClusterSelector"].(map[string]any)["labelSelector"].(map[string]any)
			require.Equal(t, []any{map[string]any{"key": "cloud", "operator": "In", "values": []any{"aws"}}}, sel["matchExpressions"])
		},
	}, {
		name:    "a shared placement needs a binding name",
		yaml:    "policyDefaults:\n  namespace: p\n  placement:\n    name: all\npolicies:\n- name: a\n  manifests:\n  - path: cm.yaml\n- name: b\n  manifests:\n  - path: cm.yaml\n",
		objs:    cm,
		wantErr: "placementBindingDefaults.name must be set: placement all is shared by policies [a b]",
	}, {
		name:    "a root Policy is not a manifest",
		yaml:    "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  manifests:\n  - path: p.yaml\n",
		objs:    map[string][]map[string]any{"p.yaml": {{"apiVersion": "policy.open-cluster-management.io/v1", "kind": "Policy", "metadata": map[string]any{"name": "x"}}}},
		wantErr: "policy a, manifest p.yaml (document 1): a root Policy cannot be a manifest",
	}, {
		name:    "a manifest needs a kind",
		yaml:    "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  manifests:\n  - path: x.yaml\n",
		objs:    map[string][]map[string]any{"x.yaml": {{"apiVersion": "v1"}}},
		wantErr: "kind is missing",
	}, {
		name:    "a policy template needs a name",
		yaml:    "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  manifests:\n  - path: x.yaml\n",
		objs:    map[string][]map[string]any{"x.yaml": {{"apiVersion": "policy.open-cluster-management.io/v1", "kind": "CertificatePolicy", "metadata": map[string]any{}}}},
		wantErr: "CertificatePolicy policy.open-cluster-management.io/v1 has no metadata.name",
	}, {
		name:    "two placements of one name",
		yaml:    "policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  placement:\n    name: same\n  manifests:\n  - path: cm.yaml\n- name: b\n  placement:\n    name: same\n    labelSelector:\n      x: y\n  manifests:\n  - path: cm.yaml\n",
		objs:    cm,
		wantErr: "policies[1] (b).placement: a second placement named same",
	}, {
		name: "informOnly makes the root inform",
		yaml: "policyDefaults:\n  namespace: p\n  remediationAction: InformOnly\npolicies:\n- name: a\n  manifests:\n  - path: cm.yaml\n",
		objs: cm,
		check: func(t *testing.T, objs []map[string]any) {
			require.Equal(t, "inform", byKind(objs, "Policy")[0]["spec"].(map[string]any)["remediationAction"])
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Generate(resolved(t, tc.yaml, tc.objs))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			tc.check(t, objs)
		})
	}
}

// TestLoadRefusals: paths outside the configuration's tree, remote
// kustomize resources, empty files and placement files without a Placement
// are refused, naming the field.
func TestLoadRefusals(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "gen")
	write := func(rel, content string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644))
	}
	write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
	write("empty.yaml", "---\n")
	write("remote/kustomization.yaml", "resources:\n- github.com/org/repo//deploy?ref=main\n")
	write("rule.yaml", "apiVersion: apps.open-cluster-management.io/v1\nkind: PlacementRule\nmetadata:\n  name: r\n  namespace: p\n")
	write("other-ns.yaml", "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata:\n  name: r\n  namespace: elsewhere\n")
	require.NoError(t, os.WriteFile(filepath.Join(root, "secret.yaml"), []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n"), 0o644))
	for _, tc := range []struct{ name, yaml, want string }{
		{"outside the tree", "policies:\n- name: a\n  manifests:\n  - path: ../secret.yaml\n", "policies[0] (a).manifests[0].path: ../secret.yaml is outside the configuration's directory"},
		{"the directory itself", "policies:\n- name: a\n  manifests:\n  - path: .\n", "is the configuration's own directory"},
		{"missing", "policies:\n- name: a\n  manifests:\n  - path: nope.yaml\n", "nope.yaml cannot be read"},
		{"empty", "policies:\n- name: a\n  manifests:\n  - path: empty.yaml\n", "empty.yaml holds no YAML object"},
		{"remote kustomize", "policies:\n- name: a\n  manifests:\n  - path: remote\n", "names the remote resource github.com/org/repo//deploy?ref=main"},
		{"placement rule file", "  placement:\n    placementPath: rule.yaml\npolicies:\n- name: a\n  manifests:\n  - path: cm.yaml\n", "holds no Placement (kinds found: PlacementRule) (PlacementRule is deprecated"},
		{"placement elsewhere", "  placement:\n    placementPath: other-ns.yaml\npolicies:\n- name: a\n  manifests:\n  - path: cm.yaml\n", `the Placement r is in namespace "elsewhere"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write("gen.yaml", head+"policyDefaults:\n  namespace: p\n"+tc.yaml)
			_, err := File(filepath.Join(dir, "gen.yaml"), Options{})
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "gen.yaml")
		})
	}
}

// TestKustomizeRefusals: a kustomization naming a remote resource, or an
// exec plugin other than PolicyGenerator, is refused with the reason.
func TestKustomizeRefusals(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources:\n- https://example.com/app.yaml\n"), 0o644))
	_, err := Kustomize(dir)
	require.ErrorContains(t, err, "names the remote resource https://example.com/app.yaml: policy generate reads local files only")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("generators:\n- github.com/org/gen?ref=v1\n"), 0o644))
	_, err = Kustomize(dir)
	require.ErrorContains(t, err, "names the remote resource github.com/org/gen?ref=v1")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("generators:\n- other.yaml\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.yaml"), []byte("apiVersion: example.com/v1\nkind: SecretsFromVault\nmetadata:\n  name: x\n"), 0o644))
	_, err = Kustomize(dir)
	require.ErrorContains(t, err, "kustomize build "+dir)

	_, err = Kustomize(t.TempDir())
	require.ErrorContains(t, err, "has no kustomization.yaml")
}

// TestKustomizeOutsideRefused: a manifest kustomization (or one it includes)
// naming a kustomization outside the configuration's directory, directly or
// through a symlink, is refused; one elsewhere inside it is built.
func TestKustomizeOutsideRefused(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "gen")
	write := func(rel, content string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, rel), []byte(content), 0o644))
	}
	write("secrets/kustomization.yaml", "resources:\n- s.yaml\n")
	write("secrets/s.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: private\n")
	write("gen/base/kustomization.yaml", "resources:\n- cm.yaml\n")
	write("gen/base/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
	write("gen/up/kustomization.yaml", "resources:\n- ../../secrets\n")
	write("gen/nested/kustomization.yaml", "resources:\n- ../up\n")
	write("gen/abs/kustomization.yaml", "resources:\n- "+filepath.Join(root, "secrets")+"\n")
	write("gen/link/kustomization.yaml", "resources:\n- l\n")
	require.NoError(t, os.Symlink(filepath.Join(root, "secrets"), filepath.Join(dir, "link", "l")))
	write("gen/ok/kustomization.yaml", "resources:\n- ../base\n")
	for _, tc := range []struct{ name, path, want string }{
		{"parent", "up", "names ../../secrets, outside"},
		{"through an included kustomization", "nested", "names ../../secrets, outside"},
		{"absolute", "abs", ", outside"},
		{"symlink", "link", "names l, outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write("gen/gen.yaml", head+"policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  manifests:\n  - path: "+tc.path+"\n")
			_, err := File(filepath.Join(dir, "gen.yaml"), Options{})
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "reads files below the configuration's directory only")
		})
	}
	write("gen/gen.yaml", head+"policyDefaults:\n  namespace: p\npolicies:\n- name: a\n  manifests:\n  - path: ok\n")
	_, err := File(filepath.Join(dir, "gen.yaml"), Options{})
	require.NoError(t, err)
}

// TestKustomizeRemoteFiles: kustomize fetches an http(s) URL wherever it
// loads a file (patches, generator files, openapi, ...) and clones SCP-style
// and mixed-case GitHub resources with git; all are refused before kustomize
// runs, in every kustomization file name, and a URL inside an inline patch or
// an annotation is not mistaken for a remote file.
func TestKustomizeRemoteFiles(t *testing.T) {
	for _, tc := range []struct{ name, file, content, want string }{
		{"patch path", "kustomization.yaml", "patches:\n- path: https://127.0.0.1:1/p.yaml\n", "names the remote file https://127.0.0.1:1/p.yaml"},
		{"configMap file", "kustomization.yaml", "configMapGenerator:\n- name: c\n  files:\n  - k=HTTP://127.0.0.1:1/x\n", "names the remote file k=HTTP://127.0.0.1:1/x"},
		{"secret envs", "kustomization.yaml", "secretGenerator:\n- name: c\n  envs:\n  - http://127.0.0.1:1/e\n", "names the remote file http://127.0.0.1:1/e"},
		{"openapi", "kustomization.yaml", "openapi:\n  path: https://127.0.0.1:1/o.json\n", "names the remote file https://127.0.0.1:1/o.json"},
		{"strategic merge", "kustomization.yaml", "patchesStrategicMerge:\n- https://127.0.0.1:1/s.yaml\n", "names the remote file"},
		{"scp style", "kustomization.yaml", "resources:\n- deploy@git.example.com:org/repo.git\n", "names the remote resource deploy@git.example.com:org/repo.git"},
		{"mixed case github", "kustomization.yaml", "resources:\n- GitHub.com/org/repo\n", "names the remote resource GitHub.com/org/repo"},
		{"Kustomization file name", "Kustomization", "resources:\n- https://127.0.0.1:1/app.yaml\n", "names the remote resource https://127.0.0.1:1/app.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.content), 0o644))
			_, err := Kustomize(dir)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "policy generate reads local files only")
		})
	}

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(
		"resources:\n- cm.yaml\ncommonAnnotations:\n  docs: https://example.com/docs\n"+
			"patches:\n- patch: |\n    - op: add\n      path: /data\n      value: {url: \"https://example.com\"}\n  target:\n    kind: ConfigMap\n"), 0o644))
	objs, err := Kustomize(dir)
	require.NoError(t, err)
	require.Len(t, objs, 1)
}
