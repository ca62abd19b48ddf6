package compare

import (
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// volatileMetadata are fields the apiserver owns; they never appear in a diff.
var volatileMetadata = []string{"managedFields", "resourceVersion", "generation", "creationTimestamp", "uid", "selfLink"}

// Diff is a unified diff (YAML) from the live object to the merged one, with
// server-owned metadata and status left out. It is empty when they are equal.
func Diff(name string, live, merged map[string]any) string {
	a, b := diffable(live), diffable(merged)
	if a == b {
		return ""
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(a), B: lines(b),
		FromFile: name + " : existing", ToFile: name + " : updated", Context: 5, // as upstream
	})
	if err != nil {
		return ""
	}
	return strings.TrimRight(d, "\n")
}

func diffable(obj map[string]any) string {
	if obj == nil {
		return ""
	}
	c := runtime.DeepCopyJSON(obj)
	delete(c, "status")
	if md, ok := c["metadata"].(map[string]any); ok {
		for _, k := range volatileMetadata {
			delete(md, k)
		}
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		return ""
	}
	return string(out)
}

// lines splits text after each newline, without difflib's extra empty line.
func lines(text string) []string {
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	out := strings.SplitAfter(text, "\n")
	return out[:len(out)-1]
}
