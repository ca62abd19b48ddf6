package generator

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// generatedFile is the name the generated objects take in the in-memory
// copy of a kustomization directory.
const generatedFile = ".flotilla-policy-generator.yaml"

// KustomizationFile is the kustomization file of dir, or "" when it has
// none.
func KustomizationFile(dir string) string {
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err == nil && !info.IsDir() {
			return filepath.Join(dir, name)
		}
	}
	return ""
}

// Kustomize builds a kustomization directory as `kustomize build
// --enable-alpha-plugins DIR` does with upstream's generator installed as
// its exec plugin: the PolicyGenerator configurations its generators list
// are generated here (paths relative to dir, as kustomize runs plugins in the
// kustomization's directory), and kustomize builds the rest around them
// (resources, labels, annotations, namespace, patches), from an in-memory
// copy of dir where the generated objects stand in for those generators. As
// kustomize's defaults have it, only files below dir are read and no other
// plugin runs.
func Kustomize(dir string) ([]map[string]any, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	file := KustomizationFile(dir)
	if file == "" {
		return nil, fmt.Errorf("%s has no kustomization.yaml", dir)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	if err := checkLocal(dir, root, map[string]bool{}); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var generated []map[string]any
	var others []any
	gens, _ := k["generators"].([]any)
	for _, g := range gens {
		rel, ok := g.(string)
		if !ok || !isGeneratorConfig(filepath.Join(dir, rel)) {
			others = append(others, g)
			continue
		}
		objs, err := File(filepath.Join(dir, rel), Options{BaseDir: dir})
		if err != nil {
			return nil, err
		}
		generated = append(generated, objs...)
	}

	mem := filesys.MakeFsInMemory()
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return mem.MkdirAll(path)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return mem.WriteFile(path, b)
	})
	if err != nil {
		return nil, err
	}
	if len(generated) > 0 {
		var stream bytes.Buffer
		if err := Write(&stream, generated); err != nil {
			return nil, err
		}
		if err := mem.WriteFile(filepath.Join(dir, generatedFile), stream.Bytes()); err != nil {
			return nil, err
		}
		resources, _ := k["resources"].([]any)
		k["resources"] = append(resources, generatedFile)
		if len(others) > 0 {
			k["generators"] = others
		} else {
			delete(k, "generators")
		}
		b, err := yaml.Marshal(k)
		if err != nil {
			return nil, err
		}
		if err := mem.WriteFile(file, b); err != nil {
			return nil, err
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	out, err := res.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	return decodeDocuments(out, dir)
}

// isGeneratorConfig says whether path is a file holding one PolicyGenerator
// configuration.
func isGeneratorConfig(path string) bool {
	info, err := os.Stat(path)
	if err != nil || info.IsDir() {
		return false
	}
	docs, err := readDocuments(path)
	return err == nil && len(docs) == 1 && docs[0]["kind"] == Kind && docs[0]["apiVersion"] == APIVersion
}
