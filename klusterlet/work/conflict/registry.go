package conflict

import (
	"sort"
	"sync"

	"flotilla.dev/flotilla/klusterlet/work/applied"
)

// Registry remembers, per object, the content (manifest hash) each work of
// this agent asks for, so a work can tell that another one wants the same
// object with different content. It lives in memory: after a restart it fills
// again as the works are reconciled.
type Registry struct {
	mu     sync.Mutex
	byKey  map[applied.Key]map[string]string
	byWork map[string]map[applied.Key]string
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{byKey: map[applied.Key]map[string]string{}, byWork: map[string]map[applied.Key]string{}}
}

// Set replaces what work asks for (object -> manifest hash) and returns the
// other works that claim an object whose claims changed (work added it,
// dropped it or changed its content): their view of the conflict changed, so
// they should be looked at again. Sorted, without duplicates.
func (r *Registry) Set(work string, claims map[applied.Key]string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.byWork[work]
	changed := map[applied.Key]bool{}
	for k, h := range prev {
		if nh, ok := claims[k]; !ok || nh != h {
			changed[k] = true
		}
	}
	for k, h := range claims {
		if ph, ok := prev[k]; !ok || ph != h {
			changed[k] = true
		}
	}
	for k := range prev {
		delete(r.byKey[k], work)
		if len(r.byKey[k]) == 0 {
			delete(r.byKey, k)
		}
	}
	if len(claims) == 0 {
		delete(r.byWork, work)
	} else {
		own := make(map[applied.Key]string, len(claims))
		for k, h := range claims {
			own[k] = h
			if r.byKey[k] == nil {
				r.byKey[k] = map[string]string{}
			}
			r.byKey[k][work] = h
		}
		r.byWork[work] = own
	}
	seen := map[string]bool{}
	var out []string
	for k := range changed {
		for w := range r.byKey[k] {
			if w != work && !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Drop forgets work (it is gone) and returns the works to look at again, as Set.
func (r *Registry) Drop(work string) []string { return r.Set(work, nil) }

// Others returns the other works that ask for key with content other than
// hash, sorted.
func (r *Registry) Others(work string, key applied.Key, hash string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for w, h := range r.byKey[key] {
		if w != work && h != hash {
			out = append(out, w)
		}
	}
	sort.Strings(out)
	return out
}
