// Command policykinds counts the policy template kinds of a
// policy-collection checkout (github.com/open-cluster-management-io/policy-collection):
// every spec.policy-templates[].objectDefinition of every Policy in the
// YAML files under its stable/ and community/ folders, by apiVersion and
// kind. docs/governance.md's coverage table is its output.
//
//	go run ./hack/policykinds -repo /path/to/policy-collection
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func main() {
	repo := flag.String("repo", "", "a policy-collection checkout")
	flag.Parse()
	if *repo == "" {
		fmt.Fprintln(os.Stderr, "usage: policykinds -repo /path/to/policy-collection")
		os.Exit(2)
	}
	counts := map[string]int{}
	files := map[string]int{}
	skipped := 0
	for _, top := range []string{"stable", "community"} {
		err := filepath.WalkDir(filepath.Join(*repo, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			seen := map[string]bool{}
			r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
			for {
				doc, err := r.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					skipped++
					break
				}
				var obj struct {
					Kind string `json:"kind"`
					Spec struct {
						Templates []struct {
							Def struct {
								APIVersion string `json:"apiVersion"`
								Kind       string `json:"kind"`
							} `json:"objectDefinition"`
						} `json:"policy-templates"`
					} `json:"spec"`
				}
				if yaml.Unmarshal(doc, &obj) != nil {
					skipped++
					continue
				}
				if obj.Kind != "Policy" {
					continue
				}
				for _, t := range obj.Spec.Templates {
					k := t.Def.APIVersion + " " + t.Def.Kind
					counts[k]++
					if !seen[k] {
						seen[k] = true
						files[k]++
					}
				}
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	fmt.Println("| apiVersion | kind | templates | files |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, k := range keys {
		av, kind, _ := strings.Cut(k, " ")
		fmt.Printf("| `%s` | %s | %d | %d |\n", av, kind, counts[k], files[k])
	}
	if skipped > 0 {
		fmt.Fprintf(os.Stderr, "%d documents were not YAML objects and were skipped\n", skipped)
	}
}
