package generator

import (
	"errors"
	"fmt"
	"os"
	"path"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// patch applies a manifest's patches (strategic merge or JSON merge patches,
// as kustomize applies them) to its objects, with an optional OpenAPI schema
// for custom kinds' lists. With one object, a patch may leave out
// apiVersion, kind, name and namespace: they are the object's.
func patch(objs []map[string]any, patches []map[string]any, openAPI string) ([]map[string]any, error) {
	if len(objs) == 0 {
		return nil, errors.New("patches need at least one object to patch")
	}
	for i, o := range objs {
		if err := identified(o); err != nil {
			return nil, fmt.Errorf("object %d: %w (patches find objects by these)", i+1, err)
		}
	}
	for i, p := range patches {
		if len(objs) == 1 {
			fillPatch(p, objs[0])
		}
		if err := identified(p); err != nil {
			return nil, fmt.Errorf("patches[%d]: %w (needed when the path holds more than one object)", i, err)
		}
	}

	const dir = "/patch"
	fs := filesys.MakeFsInMemory()
	if err := fs.MkdirAll(dir); err != nil {
		return nil, err
	}
	type ref struct {
		Path string `json:"path"`
	}
	k := struct {
		Resources []string `json:"resources"`
		Patches   []ref    `json:"patches"`
		OpenAPI   *ref     `json:"openapi,omitempty"`
	}{}
	write := func(name string, v any) error {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		return fs.WriteFile(path.Join(dir, name), b)
	}
	for i, o := range objs {
		name := fmt.Sprintf("object%d.yaml", i)
		if err := write(name, o); err != nil {
			return nil, err
		}
		k.Resources = append(k.Resources, name)
	}
	for i, p := range patches {
		name := fmt.Sprintf("patch%d.yaml", i)
		if err := write(name, p); err != nil {
			return nil, err
		}
		k.Patches = append(k.Patches, ref{Path: name})
	}
	if openAPI != "" {
		schema, err := os.ReadFile(openAPI)
		if err != nil {
			return nil, fmt.Errorf("openapi.path: %w", err)
		}
		if err := fs.WriteFile(path.Join(dir, "schema.json"), schema); err != nil {
			return nil, err
		}
		k.OpenAPI = &ref{Path: "schema.json"}
	}
	if err := write("kustomization.yaml", k); err != nil {
		return nil, err
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, dir)
	if err != nil {
		return nil, fmt.Errorf("applying the patches: %w", err)
	}
	out, err := res.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("applying the patches: %w", err)
	}
	return decodeDocuments(out, "the patched objects")
}

// identified checks the fields kustomize finds an object by.
func identified(o map[string]any) error {
	meta, _ := o["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	switch {
	case str(o, "apiVersion") == "":
		return errors.New("apiVersion is missing")
	case str(o, "kind") == "":
		return errors.New("kind is missing")
	case name == "":
		return errors.New("metadata.name is missing")
	}
	return nil
}

// fillPatch takes what the patch leaves out from the one object it patches.
func fillPatch(p, obj map[string]any) {
	for _, k := range []string{"apiVersion", "kind"} {
		if str(p, k) == "" && str(obj, k) != "" {
			p[k] = obj[k]
		}
	}
	om, _ := obj["metadata"].(map[string]any)
	pm, _ := p["metadata"].(map[string]any)
	if pm == nil {
		pm = map[string]any{}
		p["metadata"] = pm
	}
	for _, k := range []string{"name", "namespace"} {
		if v, _ := pm[k].(string); v == "" {
			if ov, _ := om[k].(string); ov != "" {
				pm[k] = ov
			}
		}
	}
}
