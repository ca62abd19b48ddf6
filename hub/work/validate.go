package work

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
)

// DefaultManifestLimit is the default cap on the total size of a ManifestWork's
// manifests: 500 KiB, as in OCM.
const DefaultManifestLimit = 500 * 1024

// Validate checks a ManifestWork's manifests and returns one message per
// problem, each naming the offending manifest by index and kind, or nil when
// the work is acceptable. limit is the largest total manifest size in bytes
// (DefaultManifestLimit when <= 0).
func Validate(work *workv1.ManifestWork, limit int) []string {
	if limit <= 0 {
		limit = DefaultManifestLimit
	}
	manifests := work.Spec.Workload.Manifests
	if len(manifests) == 0 {
		return []string{"spec.workload.manifests is empty: a ManifestWork needs at least one manifest"}
	}
	var problems []string
	type id struct{ apiVersion, kind, namespace, name string }
	seen := map[id]int{}
	total, largest, largestAt := 0, 0, 0
	kinds := make([]string, len(manifests))
	for i, m := range manifests {
		raw := manifestBytes(m)
		total += len(raw)
		if len(raw) > largest {
			largest, largestAt = len(raw), i
		}
		where := fmt.Sprintf("manifest %d", i)
		trimmed := bytes.TrimSpace(raw)
		if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) || bytes.Equal(trimmed, []byte("{}")) {
			problems = append(problems, where+" is empty")
			continue
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(trimmed, &u.Object); err != nil {
			problems = append(problems, fmt.Sprintf("%s is not a JSON object: %v", where, err))
			continue
		}
		kind := u.GetKind()
		kinds[i] = kind
		if kind != "" {
			where = fmt.Sprintf("manifest %d (%s)", i, kind)
		}
		var missing []string
		if u.GetAPIVersion() == "" {
			missing = append(missing, "apiVersion")
		}
		if kind == "" {
			missing = append(missing, "kind")
		}
		if u.GetName() == "" {
			missing = append(missing, "metadata.name")
		}
		if len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("%s has no %s", where, strings.Join(missing, ", ")))
		}
		if u.GetGenerateName() != "" {
			problems = append(problems, fmt.Sprintf("%s uses metadata.generateName %q: a work must name its resources (set metadata.name)", where, u.GetGenerateName()))
		}
		if u.GetName() == "" || kind == "" {
			continue
		}
		key := id{u.GetAPIVersion(), kind, u.GetNamespace(), u.GetName()}
		if first, dup := seen[key]; dup {
			name := u.GetName()
			if u.GetNamespace() != "" {
				name = u.GetNamespace() + "/" + name
			}
			problems = append(problems, fmt.Sprintf("manifest %d (%s %s) duplicates manifest %d", i, kind, name, first))
		} else {
			seen[key] = i
		}
	}
	if total > limit {
		k := kinds[largestAt]
		if k == "" {
			k = "unknown kind"
		}
		problems = append(problems, fmt.Sprintf("manifests total %d bytes, more than the limit of %d bytes; the largest is manifest %d (%s, %d bytes)",
			total, limit, largestAt, k, largest))
	}
	return problems
}

func manifestBytes(m workv1.Manifest) []byte {
	if len(m.Raw) > 0 {
		return m.Raw
	}
	if m.Object != nil {
		b, err := json.Marshal(m.Object)
		if err == nil {
			return b
		}
	}
	return nil
}
