package evaluate

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// clusterScoped are the built-in (and OCM) kinds that are not namespaced.
var clusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}: true, {Kind: "Node"}: true, {Kind: "PersistentVolume"}: true, {Kind: "ComponentStatus"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "cluster.open-cluster-management.io", Kind: "ManagedCluster"}:             true,
	{Group: "cluster.open-cluster-management.io", Kind: "ManagedClusterSet"}:          true,
	{Group: "cluster.open-cluster-management.io", Kind: "ClusterClaim"}:               true,
	{Group: "security.openshift.io", Kind: "SecurityContextConstraints"}:              true,
}

type objectKey struct {
	gk        schema.GroupKind
	namespace string
	name      string
}

// Objects is a Cluster held in memory, for `policy dryrun` and tests. It
// serves the built-in Kubernetes kinds, the kinds of the objects it holds and
// the kinds their CustomResourceDefinitions define; any other kind is unknown.
// Its namespaces are the Namespace objects it holds plus, for the
// namespaceSelector only, the namespaces its objects live in.
type Objects struct {
	objects map[objectKey]*unstructured.Unstructured
	kinds   map[schema.GroupVersionKind]Mapping
}

var _ Cluster = (*Objects)(nil)

// NewObjects holds objs. Two objects with the same kind, namespace and name
// are an error.
func NewObjects(objs ...*unstructured.Unstructured) (*Objects, error) {
	o := &Objects{objects: map[objectKey]*unstructured.Unstructured{}, kinds: map[schema.GroupVersionKind]Mapping{}}
	for gvk := range clientgoscheme.Scheme.AllKnownTypes() {
		if gvk.Version != "__internal" {
			o.addKind(gvk, !clusterScoped[gvk.GroupKind()])
		}
	}
	o.addKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, false)
	o.addKind(policyv1.GroupVersion.WithKind("ConfigurationPolicy"), true)
	for _, obj := range objs {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
		plural, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "plural")
		scope, _, _ := unstructured.NestedString(obj.Object, "spec", "scope")
		versions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "versions")
		for _, v := range versions {
			vm, _ := v.(map[string]any)
			name, _ := vm["name"].(string)
			gvk := schema.GroupVersionKind{Group: group, Version: name, Kind: kind}
			o.kinds[gvk] = Mapping{GVK: gvk, Resource: plural, Namespaced: scope != "Cluster"}
		}
	}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		if gvk.Kind == "" || obj.GetName() == "" {
			return nil, fmt.Errorf("object %q of kind %q: every object needs apiVersion, kind and metadata.name", obj.GetName(), gvk.Kind)
		}
		if _, known := o.kinds[gvk]; !known {
			o.addKind(gvk, obj.GetNamespace() != "")
		}
		m := o.kinds[gvk]
		if !m.Namespaced && obj.GetNamespace() != "" {
			return nil, fmt.Errorf("%s %q has namespace %q but %s is cluster-scoped", gvk.Kind, obj.GetName(), obj.GetNamespace(), gvk.Kind)
		}
		if m.Namespaced && obj.GetNamespace() == "" {
			obj = obj.DeepCopy()
			obj.SetNamespace("default")
		}
		k := objectKey{gk: gvk.GroupKind(), namespace: obj.GetNamespace(), name: obj.GetName()}
		if _, dup := o.objects[k]; dup {
			return nil, fmt.Errorf("%s %s is given twice", gvk.Kind, name(k.namespace, k.name))
		}
		o.objects[k] = obj
	}
	return o, nil
}

func (o *Objects) addKind(gvk schema.GroupVersionKind, namespaced bool) {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	o.kinds[gvk] = Mapping{GVK: gvk, Resource: plural.Resource, Namespaced: namespaced}
}

// Mapping implements Cluster.
func (o *Objects) Mapping(gvk schema.GroupVersionKind) (Mapping, error) {
	m, ok := o.kinds[gvk]
	if !ok {
		return Mapping{}, &UnknownKindError{GVK: gvk}
	}
	return m, nil
}

// Get implements Cluster.
func (o *Objects) Get(m Mapping, namespace, n string) (*unstructured.Unstructured, error) {
	return o.objects[objectKey{gk: m.GVK.GroupKind(), namespace: namespace, name: n}], nil
}

// List implements Cluster.
func (o *Objects) List(m Mapping, namespace string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for k, obj := range o.objects {
		if k.gk == m.GVK.GroupKind() && k.namespace == namespace {
			out = append(out, obj)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

// Namespaces implements Cluster.
func (o *Objects) Namespaces() ([]Namespace, error) {
	seen := map[string]bool{}
	var out []Namespace
	for k, obj := range o.objects {
		if k.gk == (schema.GroupKind{Kind: "Namespace"}) {
			seen[k.name] = true
			out = append(out, Namespace{Name: k.name, Labels: obj.GetLabels(), Terminating: obj.GetDeletionTimestamp() != nil})
		}
	}
	for k := range o.objects {
		if k.namespace != "" && !seen[k.namespace] {
			seen[k.namespace] = true
			out = append(out, Namespace{Name: k.namespace})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// All returns every object held (namespaced objects given without a
// namespace are in "default"), sorted by kind, namespace and name.
func (o *Objects) All() []*unstructured.Unstructured {
	keys := make([]objectKey, 0, len(o.objects))
	for k := range o.objects {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.gk != b.gk {
			return a.gk.String() < b.gk.String()
		}
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		return a.name < b.name
	})
	out := make([]*unstructured.Unstructured, 0, len(keys))
	for _, k := range keys {
		out = append(out, o.objects[k])
	}
	return out
}
