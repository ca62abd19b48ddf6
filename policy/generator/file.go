package generator

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"sigs.k8s.io/yaml"
)

// Options tune File.
type Options struct {
	// BaseDir is the directory manifest and placement paths are relative to
	// and must stay in. Default: the configuration file's directory. A
	// kustomize exec plugin gets the kustomization's directory (its working
	// directory), since kustomize hands it a copy of the configuration.
	BaseDir string
}

// File generates the objects of the PolicyGenerator configuration in path:
// Parse, Resolve, Load, Generate.
func File(path string, o Options) ([]map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	cfg.BaseDir = o.BaseDir
	if cfg.BaseDir == "" {
		cfg.BaseDir = filepath.Dir(path)
	}
	if err := cfg.Resolve(); err != nil {
		return nil, err
	}
	if err := cfg.Load(); err != nil {
		return nil, err
	}
	return Generate(cfg)
}

// Configs lists the PolicyGenerator configurations of a directory (its
// *.yaml and *.yml files whose kind is PolicyGenerator, in name order), or
// the path itself when it is a file.
func Configs(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() || !slices.Contains([]string{".yaml", ".yml"}, filepath.Ext(e.Name())) {
			continue
		}
		if f := filepath.Join(path, e.Name()); isGeneratorConfig(f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no PolicyGenerator configuration (a *.yaml or *.yml file of apiVersion %s, kind %s)", path, APIVersion, Kind)
	}
	return out, nil
}

// Write writes objects as a YAML stream, each document after a "---" line,
// ready for kubectl apply -f -.
func Write(w io.Writer, objs []map[string]any) error {
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", b); err != nil {
			return err
		}
	}
	return nil
}

// Paths generates the objects the paths name, in order: a file is one
// configuration (File); a directory with a kustomization is built as
// kustomize builds it with the PolicyGenerator plugin (Kustomize); another
// directory stands for its configurations (Configs).
func Paths(paths []string, o Options) ([]map[string]any, error) {
	var out []map[string]any
	for _, p := range paths {
		if info, err := os.Stat(p); err == nil && info.IsDir() && KustomizationFile(p) != "" {
			objs, err := Kustomize(p)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
			continue
		}
		configs, err := Configs(p)
		if err != nil {
			return nil, err
		}
		for _, c := range configs {
			objs, err := File(c, o)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
	}
	return out, nil
}

// WriteJSON writes objects as one v1 List, which kubectl apply -f - takes too.
func WriteJSON(w io.Writer, objs []map[string]any) error {
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = o
	}
	b, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
