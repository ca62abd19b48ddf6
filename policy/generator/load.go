package generator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Load reads what a resolved configuration points at, relative to its
// BaseDir and never outside it: each manifest path (a file of one or more
// YAML documents; a directory's *.yaml and *.yml files, not its
// subdirectories; or a directory with a kustomization, built by kustomize),
// with the manifest's patches applied, and each placementPath file.
func (c *Config) Load() error {
	base, err := filepath.EvalSymlinks(c.BaseDir)
	if err != nil {
		return fmt.Errorf("%s: the configuration's directory: %w", c.File, err)
	}
	c.BaseDir = base
	for i := range c.Policies {
		p := &c.Policies[i]
		for j := range p.Manifests {
			m := &p.Manifests[j]
			where := fmt.Sprintf("policies[%d] (%s).manifests[%d].path", i, p.Name, j)
			objs, err := c.readManifest(m)
			if err != nil {
				return c.errorf("%s: %v", where, err)
			}
			m.objects = objs
		}
	}
	placements := []*PlacementConfig{&c.PolicyDefaults.Placement, &c.PolicySetDefaults.Placement}
	for i := range c.Policies {
		placements = append(placements, &c.Policies[i].Placement)
	}
	for i := range c.PolicySets {
		placements = append(placements, &c.PolicySets[i].Placement)
	}
	for _, p := range placements {
		if p.PlacementPath == "" {
			continue
		}
		path, err := c.inside(p.PlacementPath)
		if err != nil {
			return c.errorf("placementPath: %v", err)
		}
		if p.placement, err = readDocuments(path); err != nil {
			return c.errorf("placementPath: %v", err)
		}
	}
	return nil
}

// inside resolves a configuration path against BaseDir and checks that it
// stays in the tree below it.
func (c *Config) inside(rel string) (string, error) {
	path := rel
	if !filepath.IsAbs(path) {
		path = filepath.Join(c.BaseDir, rel)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("%s cannot be read: %w", rel, err)
	}
	r, err := filepath.Rel(c.BaseDir, real)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the configuration's directory %s", rel, c.BaseDir)
	}
	if r == "." {
		return "", fmt.Errorf("%s is the configuration's own directory; name a file or a subdirectory", rel)
	}
	return real, nil
}

func (c *Config) readManifest(m *Manifest) ([]map[string]any, error) {
	path, err := c.inside(m.Path)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var objs []map[string]any
	if info.IsDir() {
		objs, err = readDirectory(path, c.BaseDir)
		if err != nil {
			return nil, err
		}
	} else {
		objs, err = readDocuments(path)
		if err != nil {
			return nil, err
		}
		if len(objs) == 0 {
			return nil, fmt.Errorf("%s holds no YAML object", m.Path)
		}
		renameSingle(objs, m.Patches)
	}
	if len(m.Patches) == 0 {
		return objs, nil
	}
	openAPI := ""
	if m.OpenAPI.Path != "" {
		if openAPI, err = c.inside(m.OpenAPI.Path); err != nil {
			return nil, fmt.Errorf("openapi.path: %w", err)
		}
	}
	return patch(objs, m.Patches, openAPI)
}

// readDirectory reads a directory's YAML files in name order, or, when it
// has a kustomization, what kustomize builds from it (reading nothing
// outside root).
func readDirectory(dir, root string) ([]map[string]any, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		switch e.Name() {
		case "kustomization.yaml", "kustomization.yml":
			return kustomize(dir, root)
		}
		if ext := filepath.Ext(e.Name()); ext == ".yaml" || ext == ".yml" {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	var objs []map[string]any
	for _, f := range files {
		docs, err := readDocuments(f)
		if err != nil {
			return nil, err
		}
		objs = append(objs, docs...)
	}
	return objs, nil
}

// kustomize builds a kustomization directory with kustomize's defaults (no
// plugins, files only from below the kustomization), after checking that it
// names no remote resource and no kustomization outside root.
func kustomize(dir, root string) ([]map[string]any, error) {
	if err := checkLocal(dir, root, map[string]bool{}); err != nil {
		return nil, err
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	out, err := res.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	return decodeDocuments(out, dir)
}

// checkLocal refuses a kustomization (and the local ones it includes) that
// names a remote resource or a remote file: generate reads local files only.
// Besides resources, bases, components and plugin configurations (which
// kustomize clones with git), every field kustomize loads a file from
// (patches, generator files and envs, openapi, crds, configurations,
// replacements) is checked, since kustomize fetches an http(s) URL there.
//
// kustomize keeps the files a kustomization loads below its own directory,
// but follows resources, bases and components into any directory: one
// outside root (after symlinks) is refused.
func checkLocal(dir, root string, seen map[string]bool) error {
	if seen[dir] {
		return nil
	}
	seen[dir] = true
	file := KustomizationFile(dir)
	if file == "" {
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var refs []string
	for _, key := range []string{"resources", "bases", "components", "generators", "transformers", "validators"} {
		list, _ := k[key].([]any)
		for _, v := range list {
			if s, ok := v.(string); ok { // the others are inline configurations
				refs = append(refs, s)
			}
		}
	}
	for _, r := range refs {
		if isRemote(r) {
			return fmt.Errorf("%s names the remote resource %s: policy generate reads local files only", file, r)
		}
		sub := r
		if !filepath.IsAbs(sub) {
			sub = filepath.Join(dir, r)
		}
		if info, err := os.Stat(sub); err == nil && info.IsDir() {
			real, err := filepath.EvalSymlinks(sub)
			if err != nil {
				return err
			}
			if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return fmt.Errorf("%s names %s, outside %s: policy generate reads files below the configuration's directory only", file, r, root)
			}
			if err := checkLocal(real, root, seen); err != nil {
				return err
			}
		}
	}
	var remote string
	walkLoaded(k, "", func(s string) {
		if remote == "" && strings.Contains(strings.ToLower(s), "://") {
			remote = s
		}
	})
	if remote != "" {
		return fmt.Errorf("%s names the remote file %s: policy generate reads local files only", file, remote)
	}
	return nil
}

// loadedKeys are the kustomization fields (at any depth) whose strings are
// file paths kustomize loads, and so may fetch when they are URLs.
var loadedKeys = map[string]bool{"path": true, "files": true, "envs": true, "env": true, "crds": true,
	"configurations": true, "patchesStrategicMerge": true}

// walkLoaded calls fn with every one-line string under a loadedKeys field.
func walkLoaded(v any, key string, fn func(string)) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			walkLoaded(e, k, fn)
		}
	case []any:
		for _, e := range t {
			walkLoaded(e, key, fn)
		}
	case string:
		if loadedKeys[key] && !strings.Contains(t, "\n") {
			fn(t)
		}
	}
}

// scpUser is the user@ of an SCP-style git URL (user@host:org/repo), which
// kustomize clones for any user name.
var scpUser = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@`)

func isRemote(r string) bool {
	l := strings.ToLower(r)
	if scpUser.MatchString(r) || strings.HasPrefix(l, "git::") {
		return true
	}
	for _, p := range []string{"://", "github.com/", "github.com:", "gitlab.com/", "bitbucket.org/", "?ref=", "?version="} {
		if strings.Contains(l, p) {
			return true
		}
	}
	return false
}

// renameSingle: a file holding one object with one patch takes the patch's
// metadata.name and metadata.namespace, as upstream allows.
func renameSingle(objs []map[string]any, patches []map[string]any) {
	if len(objs) != 1 || len(patches) != 1 {
		return
	}
	pm, _ := patches[0]["metadata"].(map[string]any)
	om, _ := objs[0]["metadata"].(map[string]any)
	if pm == nil || om == nil {
		return
	}
	for _, k := range []string{"name", "namespace"} {
		if v, _ := pm[k].(string); v != "" {
			om[k] = v
		}
	}
}

// readDocuments reads a file of YAML documents (null documents skipped).
func readDocuments(path string) ([]map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeDocuments(data, path)
}

// decodeDocuments decodes YAML documents into JSON-compatible objects
// (numbers kept exact as json.Number).
func decodeDocuments(data []byte, source string) ([]map[string]any, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []map[string]any
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, n, err)
		}
		if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(j))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, n, err)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: document %d is not a YAML object (a map of fields)", source, n)
		}
		out = append(out, obj)
	}
}
