package workreplicaset

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
	"flotilla.dev/flotilla/hub/workreplicaset/distribute"
)

// RenderCache remembers each replica set's last render with the key of its
// inputs (renderKey). Rendering 1,000 clusters takes about 0.1 s of CPU, and
// every work event of a rollout brings a reconcile whose inputs are the same:
// those reuse the render. Safe for concurrent use; one entry per replica set.
type RenderCache struct {
	mu      sync.Mutex
	entries map[string]renderEntry
}

type renderEntry struct {
	key string
	r   rendered
}

// rendered is what distributeWorks keeps of a render.
type rendered struct {
	out    distribute.Output
	hash   map[string]string
	failed map[string]error
}

// NewRenderCache returns an empty cache.
func NewRenderCache() *RenderCache { return &RenderCache{entries: map[string]renderEntry{}} }

func (c *RenderCache) get(rs, key string) (rendered, bool) {
	if c == nil {
		return rendered{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[rs]
	return e.r, ok && e.key == key
}

func (c *RenderCache) put(rs, key string, r rendered) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[rs] = renderEntry{key: key, r: r}
}

// forget drops a replica set's entry (it is gone).
func (c *RenderCache) forget(rs string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, rs)
}

// renderKey digests everything a render reads: the template, the policy
// (UID and generation: its spec), each cluster in order with its labels,
// claims and allocatable resources, and, for a Capacity division (which
// reads the previous shares), the revision of each cluster's work.
func renderKey(f Facts, in distribute.Input) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00", f.Hash, f.Policy.UID, f.Policy.Generation)
	capacity := f.Policy.Spec.Replicas != nil && f.Policy.Spec.Replicas.Type == distv1alpha1.Capacity
	revision := map[string]string{}
	if capacity {
		for _, w := range f.Works {
			revision[w.Namespace] = w.ResourceVersion
		}
	}
	for _, c := range in.Clusters {
		fmt.Fprintf(h, "c%d:%s", len(c.Name), c.Name)
		writeSorted(h, c.Labels)
		writeSorted(h, c.Claims)
		names := make([]string, 0, len(c.Allocatable))
		for n := range c.Allocatable {
			names = append(names, string(n))
		}
		sort.Strings(names)
		for _, n := range names {
			q := c.Allocatable[corev1.ResourceName(n)]
			fmt.Fprintf(h, "%s=%s\x00", n, q.String())
		}
		if capacity {
			fmt.Fprintf(h, "w=%s\x00", revision[c.Name])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeSorted(w io.Writer, m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Lengths first: a claim value is the cluster's to choose, and one
	// holding the separators ("x\x00b=y") must not read as two entries.
	fmt.Fprintf(w, "%d\x00", len(keys))
	for _, k := range keys {
		fmt.Fprintf(w, "%d:%s%d:%s", len(k), k, len(m[k]), m[k])
	}
}
