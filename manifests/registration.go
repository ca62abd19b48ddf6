package manifests

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

//go:embed klusterlet hub
var registrationFS embed.FS

// Registration manifest sets (folders): the klusterlet written by `flotilla join`
// and the hub deployment.
const (
	KlusterletManifests = "klusterlet"
	HubManifests        = "hub"
)

// Render executes the templates of a registration manifest set with values and
// returns the objects in file order. A missing value is an error.
func Render(set string, values any) ([]*unstructured.Unstructured, error) {
	entries, err := fs.ReadDir(registrationFS, set)
	if err != nil {
		return nil, fmt.Errorf("manifest set %q: %w", set, err)
	}
	names := []string{}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	for _, name := range names {
		file := path.Join(set, name)
		raw, err := registrationFS.ReadFile(file)
		if err != nil {
			return nil, err
		}
		tmpl, err := template.New(name).Option("missingkey=error").Parse(string(raw))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		var buf bytes.Buffer
		if err := tmpl.Execute(&buf, values); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for i, doc := range strings.Split(buf.String(), "\n---\n") {
			obj := map[string]any{}
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				return nil, fmt.Errorf("%s document %d: %w", file, i+1, err)
			}
			if len(obj) == 0 {
				continue
			}
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
	return out, nil
}
