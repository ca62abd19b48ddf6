package configpolicy

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
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

// slimPolicy is the transform of the ConfigurationPolicy informer: it keeps
// each policy decoded (a typed policy takes about a quarter of the memory
// of its unstructured form, and each evaluation needs it decoded anyway),
// without managedFields. A policy that does not decode is kept whole, so
// that its evaluation can say why.
func slimPolicy(obj any) (any, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		if p, ok := decodePolicy(o); ok {
			return p, nil
		}
		slimObject(o)
	case cache.DeletedFinalStateUnknown:
		if u, ok := o.Obj.(*unstructured.Unstructured); ok {
			if p, ok := decodePolicy(u); ok {
				o.Obj = p
				return o, nil
			}
			slimObject(u)
		}
	}
	return obj, nil
}

// decodePolicy decodes u without its managedFields; ok is false when u is
// not a ConfigurationPolicy the engine can read.
func decodePolicy(u *unstructured.Unstructured) (*policyv1.ConfigurationPolicy, bool) {
	p := &policyv1.ConfigurationPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		return nil, false
	}
	p.ManagedFields = nil
	return p, true
}
