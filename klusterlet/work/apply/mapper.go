package apply

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// Mapper maps kinds to resources with discovery cached in memory. When a kind
// is not found, it refreshes discovery (at most once per MinRefresh) and tries
// again, so kinds from CRDs applied moments ago are found.
type Mapper struct {
	mapper     *restmapper.DeferredDiscoveryRESTMapper
	minRefresh time.Duration

	mu          sync.Mutex
	lastRefresh time.Time
}

// NewMapper returns a Mapper over the discovery client.
func NewMapper(dc discovery.DiscoveryInterface) *Mapper {
	return &Mapper{
		mapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		minRefresh: 500 * time.Millisecond,
	}
}

// Mapping returns the REST mapping of gvk.
func (m *Mapper) Mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	mapping, err := m.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil || !meta.IsNoMatchError(err) {
		return mapping, err
	}
	if m.Refresh() {
		return m.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	return nil, err
}

// Refresh drops the cached discovery unless it was refreshed very recently, and
// reports whether it did.
func (m *Mapper) Refresh() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if time.Since(m.lastRefresh) < m.minRefresh {
		return false
	}
	m.lastRefresh = time.Now()
	m.mapper.Reset()
	return true
}
