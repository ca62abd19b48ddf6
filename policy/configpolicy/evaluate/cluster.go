package evaluate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Mapping is what the engine needs to know about a kind.
type Mapping struct {
	// GVK is the kind as written in the template.
	GVK schema.GroupVersionKind
	// Resource is the lower-case plural used in messages and REST paths ("namespaces").
	Resource string
	// Namespaced is true for namespaced kinds.
	Namespaced bool
}

// GVR is the mapping's group/version/resource.
func (m Mapping) GVR() schema.GroupVersionResource {
	return m.GVK.GroupVersion().WithResource(m.Resource)
}

// Namespace is a namespace as the namespaceSelector sees it.
type Namespace struct {
	Name   string
	Labels map[string]string
	// Terminating: the namespace is being deleted.
	Terminating bool
}

// Cluster is what an evaluation reads. Implementations must not return
// objects the caller may not modify: Evaluate never modifies them.
type Cluster interface {
	// Mapping resolves a kind. An unknown kind returns an *UnknownKindError.
	Mapping(gvk schema.GroupVersionKind) (Mapping, error)
	// Get returns the named object, or nil when it does not exist.
	Get(m Mapping, namespace, name string) (*unstructured.Unstructured, error)
	// List returns the objects of a kind in namespace ("" for cluster-scoped kinds).
	List(m Mapping, namespace string) ([]*unstructured.Unstructured, error)
	// Namespaces returns every namespace of the cluster.
	Namespaces() ([]Namespace, error)
}

// UnknownKindError says a kind is not served by the cluster.
type UnknownKindError struct {
	GVK schema.GroupVersionKind
}

func (e *UnknownKindError) Error() string {
	// upstream's wording
	return fmt.Sprintf("couldn't find mapping resource with kind %s in API version %s, please check if you have CRD deployed",
		e.GVK.Kind, e.GVK.GroupVersion().String())
}

// Read is what a template read from the cluster while it was resolved
// (fromSecret, fromConfigMap, fromClusterClaim, lookup, copy...Data): one
// object (Name set, whether it existed or not) or a list (Name empty;
// Namespace empty for every namespace or a cluster-scoped kind).
type Read struct {
	Resource  schema.GroupVersionResource
	Namespace string
	Name      string
}

// recorder is a Cluster that records the reads made through it.
type recorder struct {
	Cluster
	reads []Read
}

func (c *recorder) add(rd Read) {
	for _, have := range c.reads {
		if have == rd {
			return
		}
	}
	c.reads = append(c.reads, rd)
}

func (c *recorder) Get(m Mapping, namespace, name string) (*unstructured.Unstructured, error) {
	c.add(Read{Resource: m.GVR(), Namespace: namespace, Name: name})
	return c.Cluster.Get(m, namespace, name)
}

func (c *recorder) List(m Mapping, namespace string) ([]*unstructured.Unstructured, error) {
	c.add(Read{Resource: m.GVR(), Namespace: namespace})
	return c.Cluster.List(m, namespace)
}
