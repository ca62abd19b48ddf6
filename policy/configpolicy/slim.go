package configpolicy

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// slim is the transform of every informer the engine runs: it drops
// metadata.managedFields before an object enters the cache. Nothing the
// engine evaluates reads them (a template is compared, and its diff taken,
// without them), and they are often the larger part of a small object's
// metadata. Writes stay whole: an update that carries no managedFields
// leaves the apiserver's record of them as it is (only an explicit empty
// list would reset them), so enforce and status writes from the slim cache
// drop nothing.
func slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		slimObject(o)
	case cache.DeletedFinalStateUnknown:
		if u, ok := o.Obj.(*unstructured.Unstructured); ok {
			slimObject(u)
		}
	}
	return obj, nil
}

func slimObject(u *unstructured.Unstructured) {
	if md, ok := u.Object["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
}
