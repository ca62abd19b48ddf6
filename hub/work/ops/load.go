package ops

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/internal/fileinput"
)

// LoadManifests reads Kubernetes objects from files and directories: YAML
// (several documents per file) or JSON, `kind: List` expanded into its items,
// empty documents skipped. A directory contributes its *.yaml, *.yml and *.json
// files in name order (not recursing). Errors name the file and document.
// Each file may hold at most fileinput.ManifestLimit bytes (8 MiB), all of
// them together fileinput.ManifestTotalLimit (64 MiB); the hub refuses works
// over its manifest limit (500 KiB by default) anyway.
func LoadManifests(paths ...string) ([]workv1.Manifest, error) {
	if len(paths) == 0 {
		return nil, errors.New("no manifest file given: use -f FILE or -f DIR")
	}
	var out []workv1.Manifest
	budget := &fileinput.Budget{Limit: fileinput.ManifestTotalLimit, What: "manifest files"}
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := fileinput.ReadFile(f, fileinput.ManifestLimit, "manifest files")
			if err != nil {
				return nil, err
			}
			if err := budget.Take(f, int64(len(data))); err != nil {
				return nil, err
			}
			ms, err := Decode(bytes.NewReader(data), f)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Kubernetes objects found in %s", strings.Join(paths, ", "))
	}
	return out, nil
}

func expand(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("manifest path: %w", err)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("directory %s has no .yaml, .yml or .json files", p)
	}
	return files, nil
}

// Decode reads YAML or JSON documents from r; name is used in errors.
func Decode(r io.Reader, name string) ([]workv1.Manifest, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out []workv1.Manifest
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			continue
		}
		js, err := utilyaml.ToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
		if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(js, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: document %d is not an object: %w", name, doc, err)
		}
		objs := []*unstructured.Unstructured{u}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", name, doc, err)
			}
			objs = nil
			for i := range list.Items {
				objs = append(objs, &list.Items[i])
			}
		}
		for _, o := range objs {
			if o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "" {
				return nil, fmt.Errorf("%s: document %d: every object needs apiVersion, kind and metadata.name", name, doc)
			}
			b, err := json.Marshal(o.Object)
			if err != nil {
				return nil, err
			}
			out = append(out, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: b}})
		}
	}
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' || bytes.Equal(t, []byte("---")) {
			continue
		}
		out = append(out, line)
	}
	return bytes.Join(out, []byte("\n"))
}
